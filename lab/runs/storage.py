"""Where checkpoints live so that every machine can read them: the local folder, or an S3-compatible store.

    store = checkpoint_store()          # from settings.PRACTICUM_CHECKPOINT_STORE
    store.push(folder)                  # after a checkpoint is written: its files go to the shared store
    store.pull(folder)                  # before a checkpoint is read: fetched when this machine lacks it

Embedded default (PRACTICUM_CHECKPOINT_STORE empty): the checkpoint folder is the store, and both calls do nothing;
on several machines that folder must then be a shared file system. With `s3://bucket/prefix` every checkpoint folder
is mirrored under the prefix at its path relative to PRACTICUM_CHECKPOINT_DIR, through boto3 (the `s3` extra):
PRACTICUM_S3_ENDPOINT_URL points it at MinIO, Ceph or another S3-compatible service; credentials come the usual
boto3 ways (AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY, an instance role), never from the lab's settings.

A Checkpoint row is written only after its push, so a row always names files that any worker can pull.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured


class LocalStore:
    """The checkpoint folder itself (shared by a file system when there are several machines)."""

    def push(self, folder: str | Path) -> None:
        pass

    def pull(self, folder: str | Path) -> None:
        pass


class S3Store:
    def __init__(self, url: str, *, root: Path, endpoint_url: str = "", client: Any = None) -> None:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ImproperlyConfigured(f"PRACTICUM_CHECKPOINT_STORE={url!r} must be s3://bucket/prefix or empty for the local folder")
        self.bucket, self.prefix, self.root = parts.netloc, parts.path.strip("/"), Path(root).resolve()
        if client is None:
            try:
                import boto3
            except ImportError:
                raise ImproperlyConfigured("PRACTICUM_CHECKPOINT_STORE=s3://... needs the `s3` extra: pip install -e '.[s3]'") from None
            client = boto3.client("s3", endpoint_url=endpoint_url or None)
        self.client = client

    def _key(self, path: Path) -> str:
        relative = Path(path).resolve().relative_to(self.root)  # ValueError: not a checkpoint of this deployment
        return "/".join(p for p in (self.prefix, relative.as_posix()) if p)

    def push(self, folder: str | Path) -> None:
        """Upload every file under `folder` (a checkpoint folder inside PRACTICUM_CHECKPOINT_DIR)."""
        for file in sorted(Path(folder).rglob("*")):
            if file.is_file():
                self.client.upload_file(str(file), self.bucket, self._key(file))

    def pull(self, folder: str | Path) -> None:
        """Download `folder`'s files unless it is already here; a missing checkpoint is an error that names it."""
        folder = Path(folder)
        if folder.is_dir() and any(folder.iterdir()):
            return
        prefix = self._key(folder) + "/"
        found = 0
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix):
            for item in page.get("Contents", []):
                relative = item["Key"][len(prefix) :]
                target = (folder / relative).resolve()
                if not target.is_relative_to(folder.resolve()):  # a key with ".." must not write outside the folder
                    raise ValueError(f"refused the object {item['Key']!r}: it would be written outside {folder}")
                target.parent.mkdir(parents=True, exist_ok=True)
                self.client.download_file(self.bucket, item["Key"], str(target))
                found += 1
        if not found:
            raise FileNotFoundError(f"checkpoint {folder} is neither on this machine nor in s3://{self.bucket}/{prefix}")


def checkpoint_store() -> LocalStore | S3Store:
    url = settings.PRACTICUM_CHECKPOINT_STORE
    if not url:
        return LocalStore()
    return S3Store(url, root=Path(settings.PRACTICUM_CHECKPOINT_DIR), endpoint_url=settings.PRACTICUM_S3_ENDPOINT_URL)


def checkpoint_pull_if_ours(path: str) -> None:
    """Fetch a model folder that lies inside the checkpoint folder (a trained checkpoint) before a worker loads it;
    a model of the operator's store is left alone."""
    if path and Path(path).resolve().is_relative_to(Path(settings.PRACTICUM_CHECKPOINT_DIR).resolve()):
        checkpoint_store().pull(path)
        if not Path(path).is_dir():  # the local store pulls nothing; transformers would take the path for a hub id
            raise FileNotFoundError(f"checkpoint {path} is not on this machine: its folder was deleted, or is not shared with this worker")
