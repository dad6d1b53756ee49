"""What may leave a project: skills distilled from successful episodes, LoRA adapter weights, aggregate statistics.

    artifact = skills_artifact(records, redactor=r, source="project-a", round=0)
    artifact = adapter_artifact(state_dict, lora={"r": 4, "alpha": 16, "target_modules": [...]}, examples=120, source=..., round=0)
    artifact = stats_artifact(records, source="project-a", round=0)
    artifact.manifest    # {"kind", "bytes", "sha256", "source", "round", ...}: what the receiver checks before it reads

An artifact is bytes (UTF-8 JSON for skills and stats, safetensors for an adapter) plus its manifest; nothing else
travels. A skill is a procedure in words: the tool calls of a passed episode, each argument named by where its value
came from (the question, an earlier result's field) instead of the value itself, so no catalogue entry is in it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch

from environments.records import Record, call_arguments, header_passed, header_score
from training.federation.redact import PrivateRedactor

KINDS = ("skills", "adapter", "stats")


@dataclass(frozen=True)
class Artifact:
    kind: str
    payload: bytes
    source: str
    round: int
    meta: dict[str, Any]  # kind-specific: examples (adapter, weight of FedAvg), lora config, skill count ...

    def __post_init__(self) -> None:
        assert self.kind in KINDS, f"kind={self.kind!r}: one of {KINDS}"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.payload).hexdigest()

    @property
    def manifest(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "bytes": len(self.payload),
            "sha256": self.sha256,
            "source": self.source,
            "round": self.round,
            **self.meta,
        }

    def text(self) -> str:
        assert self.kind != "adapter", "an adapter is tensors, not text"
        return self.payload.decode()


_WORD = re.compile(r"[A-Za-z0-9_-]+")


def distill_skill(record: Record) -> str | None:
    """A passed episode's procedure with every argument value replaced by its provenance, or None (failed, no calls)."""
    if not header_passed(record.get("header", {})):
        return None
    steps = record.get("steps") or []
    question = next((str(s.get("message") or "") for s in steps if s.get("source") in ("env", "user")), "")
    in_question = set(_WORD.findall(question))
    sources: dict[str, str] = {}  # value -> the result field it came from
    asked: set[str] = set()  # argument values taken from the question
    parts: list[str] = []
    for step in steps:
        for call in step.get("tool_calls") or []:
            args = []
            for key, value in sorted(call_arguments(call).items()):
                text = str(value)
                if text in sources:
                    args.append(f"{key}=<{sources[text]}>")
                elif text in in_question:
                    asked.add(text)
                    args.append(f"{key}=<the asked thing in the question>")
                else:
                    args.append(f"{key}=<a value of your choice>")
            parts.append(f"call {call['name']}({', '.join(args)})")
        for result in step.get("results") or []:
            content = result.get("content")
            if isinstance(content, dict) and not result.get("is_error"):
                name = next((c["name"] for c in step.get("tool_calls") or [] if c.get("id") == result.get("call_id")), "tool")
                for field, value in content.items():
                    sources.setdefault(str(value), f"the {field} field of {name}'s result")
    if not parts:
        return None
    template = _WORD.sub(lambda m: "<asked thing>" if m.group(0) in asked else m.group(0), question)
    return f"To answer '{template}': " + "; then ".join(parts) + "."


def skills_artifact(records: Sequence[Record], *, redactor: PrivateRedactor, source: str, round: int) -> Artifact:
    """The distinct procedures of the passed records, each through the redactor (a second line of defence)."""
    skills: list[str] = []
    redactions = 0
    for record in records:
        skill = distill_skill(record)
        if skill is None:
            continue
        clean, count = redactor.redact(skill)
        redactions += count
        if clean not in skills:
            skills.append(clean)
    payload = json.dumps({"skills": skills}, sort_keys=True).encode()
    return Artifact("skills", payload, source, round, {"skills": len(skills), "redactions": redactions})


def adapter_artifact(state: Mapping[str, torch.Tensor], *, lora: dict[str, Any], examples: int, source: str, round: int) -> Artifact:
    """The adapter's tensors as safetensors bytes (no pickle: a receiver loads no code); `examples` weighs it in FedAvg."""
    from safetensors.torch import save

    payload = save({name: t.detach().to("cpu").contiguous() for name, t in state.items()}, metadata={"source": source, "round": str(round)})
    return Artifact("adapter", payload, source, round, {"examples": int(examples), "lora": dict(lora), "tensors": len(state)})


def adapter_tensors(artifact: Artifact) -> dict[str, torch.Tensor]:
    from safetensors.torch import load

    assert artifact.kind == "adapter", f"{artifact.kind} artifact has no tensors"
    return load(artifact.payload)


def skills_of(artifact: Artifact) -> list[str]:
    return [str(s) for s in json.loads(artifact.payload)["skills"]]


def stats_artifact(records: Sequence[Record], *, source: str, round: int) -> Artifact:
    """Counts and means only: episodes, passed, composite_mean, calls_mean."""
    n = len(records)
    scores = [header_score(r.get("header", {})) for r in records]
    calls = [sum(len(s.get("tool_calls") or []) for s in r.get("steps") or []) for r in records]
    stats = {
        "episodes": float(n),
        "passed": float(sum(1 for s in scores if s.get("passed"))),
        "composite_mean": sum(float(s.get("composite", 0.0)) for s in scores) / max(n, 1),
        "calls_mean": sum(calls) / max(n, 1),
    }
    return Artifact("stats", json.dumps(stats, sort_keys=True).encode(), source, round, {"episodes": n})
