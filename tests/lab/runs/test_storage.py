"""Checkpoint storage: the local folder by default, an S3-compatible store (moto's, in process) when configured."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from django.core.exceptions import ImproperlyConfigured
from moto import mock_aws

from lab.runs.storage import LocalStore, S3Store, checkpoint_pull_if_ours, checkpoint_store


@pytest.fixture
def s3(monkeypatch: Any) -> Iterator[Any]:
    for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": "us-east-1"}.items():
        monkeypatch.setenv(name, value)
    with mock_aws():
        client = boto3.client("s3")
        client.create_bucket(Bucket="lab-checkpoints")
        yield client


def _checkpoint(root: Path) -> Path:
    folder = root / "project-1" / "run-2" / "output" / "checkpoint-10"
    (folder / "nested").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"\x00weights" * 100)
    (folder / "nested" / "config.json").write_text('{"step": 10}')
    return folder


def test_without_a_store_setting_the_local_folder_is_the_store(settings: Any) -> None:
    settings.PRACTICUM_CHECKPOINT_STORE = ""
    assert isinstance(checkpoint_store(), LocalStore)


def test_a_pushed_checkpoint_is_pulled_whole_on_another_machine(s3: Any, settings: Any) -> None:
    settings.PRACTICUM_CHECKPOINT_STORE, settings.PRACTICUM_S3_ENDPOINT_URL = "s3://lab-checkpoints/team-a/", ""
    root = Path(settings.PRACTICUM_CHECKPOINT_DIR)
    folder = _checkpoint(root)
    store = checkpoint_store()
    assert isinstance(store, S3Store)
    store.push(folder)
    keys = sorted(o["Key"] for o in s3.list_objects_v2(Bucket="lab-checkpoints")["Contents"])
    assert keys == [
        "team-a/project-1/run-2/output/checkpoint-10/model.safetensors",
        "team-a/project-1/run-2/output/checkpoint-10/nested/config.json",
    ]
    original = {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    for file in sorted(folder.rglob("*"), reverse=True):  # the other machine has none of it
        file.unlink() if file.is_file() else file.rmdir()
    folder.rmdir()
    checkpoint_pull_if_ours(str(folder))
    assert {p.relative_to(folder): p.read_bytes() for p in folder.rglob("*") if p.is_file()} == original


def test_a_folder_already_here_is_not_downloaded_again_and_a_missing_one_is_named(s3: Any, tmp_path: Path) -> None:
    class NoCalls:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"the store was asked for {name}")

    folder = _checkpoint(tmp_path)
    S3Store("s3://lab-checkpoints", root=tmp_path, client=NoCalls()).pull(folder)
    with pytest.raises(
        FileNotFoundError, match=r"checkpoint .*run-9.* is neither on this machine nor in s3://lab-checkpoints/project-1/run-9/"
    ):
        S3Store("s3://lab-checkpoints", root=tmp_path, client=s3).pull(tmp_path / "project-1" / "run-9")


def test_an_object_key_that_climbs_out_of_the_folder_is_refused(s3: Any, tmp_path: Path) -> None:
    s3.put_object(Bucket="lab-checkpoints", Key="project-1/run-3/../../../evil.sh", Body=b"#!/bin/sh")
    with pytest.raises(ValueError, match="would be written outside"):
        S3Store("s3://lab-checkpoints", root=tmp_path, client=s3).pull(tmp_path / "project-1" / "run-3")
    assert not (tmp_path.parent / "evil.sh").exists()


def test_models_of_the_operators_store_are_never_fetched(settings: Any, tmp_path: Path) -> None:
    settings.PRACTICUM_CHECKPOINT_STORE = "s3://lab-checkpoints"  # would fail without credentials if it were called
    checkpoint_pull_if_ours(str(tmp_path / "models" / "qwen3-0.6b"))


def test_a_checkpoint_gone_from_the_local_store_is_named_before_anything_loads_it(settings: Any, tmp_path: Path) -> None:
    """Without the check transformers took the missing folder for a hub id ("Repo id must be in the form ...")."""
    settings.PRACTICUM_CHECKPOINT_STORE, settings.PRACTICUM_CHECKPOINT_DIR = "", str(tmp_path)
    checkpoint_pull_if_ours(str(_checkpoint(tmp_path)))  # here: nothing to say
    gone = tmp_path / "project-1" / "run-9" / "output" / "step-000004"
    with pytest.raises(FileNotFoundError, match=rf"checkpoint {gone} is not on this machine: its folder was deleted"):
        checkpoint_pull_if_ours(str(gone))


@pytest.mark.parametrize("url", ["s3://", "gs://bucket/x", "s3:/bucket"])
def test_a_store_url_that_is_not_s3_is_refused_by_name(url: str, tmp_path: Path) -> None:
    with pytest.raises(ImproperlyConfigured, match="PRACTICUM_CHECKPOINT_STORE="):
        S3Store(url, root=tmp_path, client=object())
