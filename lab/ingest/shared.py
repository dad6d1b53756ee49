"""Shared context: the large header values that many episodes hold in common, stored once instead of per episode.

    values = SharedValues()
    stored, refs, fresh = values.factor(header)   # stored: the header with each shared value replaced by None
    refs                                          # {"meta.run_info": "<sha256>", ...}: what was replaced, by digest
    fresh                                         # bytes of the values this collection had not met before
    header_expand(stored, refs, values.contents)  # the header as it was

A tau2 results file copies its run info (policy, tool schemas) and each task into every simulation's header;
an inspect log copies its plan and eval spec into every sample's. The lab stores each distinct value once per
project (lab.trajectories.shared) and the episode keeps the digest. The pipeline spends each value's canonical
size once from the upload's byte budget, as stored. No Django here.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

# Header paths whose values are shared by the episodes of one upload (or one run): the importers' run info, task,
# plan and eval spec, and any producer's tool schemas, policy and harness.
SHARED_PATHS: tuple[str, ...] = ("tools", "policy", "harness", "meta.run_info", "meta.task", "meta.eval")
# Below this a value stays inline: its reference (64 hex digits and the path) would save nothing.
MIN_SHARED_BYTES = 128


def canonical_json(value: Any) -> bytes:
    """The bytes a value is addressed by and counted as: sorted keys, no spaces, UTF-8."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _split(path: str) -> tuple[list[str], str]:
    *parents, last = path.split(".")
    return parents, last


def _get(header: Mapping[str, Any], path: str) -> Any:
    parents, last = _split(path)
    node: Any = header
    for key in parents:
        node = node.get(key) if isinstance(node, dict) else None
    return node.get(last) if isinstance(node, dict) else None


def _with(header: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of `header` with `path` set to `value`; only the dicts on the path are copied."""
    parents, last = _split(path)
    top = dict(header)
    node = top
    for key in parents:
        node[key] = dict(node[key])
        node = node[key]
    node[last] = value
    return top


class SharedValues:
    """The shared values met so far, by digest. Digests are also remembered by object identity: the episodes of one
    container hold the very same objects (the importers copy references, redaction copies only what it changes), so
    each is serialized and hashed once per upload rather than once per episode. The identity map keeps its objects
    alive, so an id is never reused for another object while it is in the map."""

    def __init__(self) -> None:
        self.contents: dict[str, Any] = {}
        self.sizes: dict[str, int] = {}
        self._by_id: dict[int, tuple[Any, str | None]] = {}

    def remember(self, value: Any) -> tuple[str | None, int]:
        """The value's digest (None: too small to share) and its size if its content is new to this collection, else 0."""
        known = self._by_id.get(id(value))
        if known is not None and known[0] is value:
            return known[1], 0
        try:
            data = canonical_json(value)
        except ValueError:  # NaN or infinity, which validated records never hold: stays inline, stored as it is today
            data = b""
        digest = hashlib.sha256(data).hexdigest() if len(data) >= MIN_SHARED_BYTES else None
        self._by_id[id(value)] = (value, digest)
        if digest is None or digest in self.contents:
            return digest, 0
        self.contents[digest], self.sizes[digest] = value, len(data)
        return digest, len(data)

    def factor(self, header: Mapping[str, Any]) -> tuple[Mapping[str, Any], dict[str, str], int]:
        """`header` with its shared values replaced by None (the argument is not changed), their digests by path, and
        the bytes of those this collection had not met before. Absent, None and small values stay as they are."""
        stored: Mapping[str, Any] = header
        refs: dict[str, str] = {}
        fresh = 0
        for path in SHARED_PATHS:
            value = _get(header, path)
            if value is None:
                continue
            digest, size = self.remember(value)
            if digest is not None:
                stored, refs[path], fresh = _with(stored, path, None), digest, fresh + size
        return stored, refs, fresh


def header_expand(header: Mapping[str, Any], refs: dict[str, str], contents: dict[str, Any]) -> Mapping[str, Any]:
    """The header with each referenced value put back (`contents` maps digest to value); a copy when refs is not empty."""
    for path, digest in refs.items():
        assert digest in contents, f"shared context {path}={digest[:12]} is not among the {len(contents)} loaded"
        header = _with(header, path, contents[digest])
    return header
