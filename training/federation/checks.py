"""The export gate: every artifact passes it before it leaves a project, and a refused one does not leave.

    result = export_gate(artifact, canaries={"catalogue.supplier_ref": "cnry..."}, attributes=cases, probe=probe)
    result.leakage   # {"membership_auc", "membership_advantage", "attribute_accuracy", "attribute_chance", ...}

Three checks:
- canaries: random strings planted in the participant's private data. The artifact's bytes are searched for each
  (case-insensitive), and an adapter is also asked to reproduce each one (greedy generation from the context that
  preceded it in a private episode: an extraction attack). One found refuses the export, naming the canary's
  field, never its value.
- membership inference (adapters): a loss-threshold attack. The exported model's mean loss on the agent tokens of
  records it was trained on (members) against records of the same task it never saw (non-members); the AUC is the
  chance that a random member has the lower loss (0.5: nothing learnt about membership).
- attribute inference: recover a private value (a catalogue color) from what is shared. From text, the value named
  next to its key; from an adapter, the candidate the model scores highest as the answer to the key's question
  without looking it up. Accuracy against chance: the best blind guess (the most common true value).
`max_advantage` refuses an export whose membership or attribute advantage over chance passes it (off by default:
tiny models and few records make these figures noisy; the round reports them either way).

`content_problems(artifact)` is what needs none of the sender's secrets (no canaries, no records): the kind's
structure and no credential- or PII-shaped text. Another installation runs it on every artifact pushed to it.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import torch

from environments.records import Record
from training.federation.artifacts import Artifact
from training.federation.redact import shapes_found


class ExportRefused(Exception):
    """The gate refused an export; `code` says which check, `fields` which private fields (never their values)."""

    def __init__(self, code: str, message: str, fields: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.code, self.message, self.fields = code, message, list(fields)


@dataclass(frozen=True)
class AttributeCase:
    key: str  # what the attacker knows (an item)
    true: str  # the private value (its color)
    candidates: tuple[tuple[str, Record], ...] = ()  # (value, a record answering the key's question with it)


@dataclass
class ModelProbe:
    """What the gate needs to attack an adapter: the model with the adapter applied, and the participant's records."""

    model: Any
    tokenizer: Any
    members: list[Record]
    nonmembers: list[Record]
    canary_contexts: dict[str, list[Record]] = field(default_factory=dict)  # canary field -> private records holding it


@dataclass
class GateResult:
    kind: str
    sha256: str
    bytes: int
    passed: bool
    canaries_found: list[str]
    leakage: dict[str, float]
    reasons: list[str]

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "sha256": self.sha256,
            "bytes": self.bytes,
            "passed": self.passed,
            "canaries_found": list(self.canaries_found),
            "leakage": dict(self.leakage),
            "reasons": list(self.reasons),
        }


def canaries_in_bytes(payload: bytes, canaries: Mapping[str, str]) -> list[str]:
    lowered = payload.lower()
    return sorted(name for name, value in canaries.items() if value.lower().encode() in lowered)


def _episodes(records: Sequence[Record], tokenizer: Any) -> list[Any]:
    from training.data import tokenize_record

    return [e for r in records for e in tokenize_record(r, tokenizer)[:1] if sum(e.mask)]


@torch.no_grad()
def record_losses(model: Any, tokenizer: Any, records: Sequence[Record]) -> list[float]:
    """Mean negative log-likelihood of each record's agent tokens under the model."""
    from training.data import collate
    from training.modeling import token_logprobs

    losses = []
    device = next(model.parameters()).device
    for episode in _episodes(records, tokenizer):
        batch = collate([episode], pad_id=tokenizer.pad_token_id)
        logp = token_logprobs(model, batch["input_ids"].to(device), batch["attention_mask"].to(device))  # (1, T-1)
        mask = batch["mask"][:, 1:].to(device).float()  # (1, T-1)
        losses.append(float(-(logp * mask).sum() / mask.sum()))
    return losses


def auc(lower_is_positive: Sequence[float], others: Sequence[float]) -> float:
    """P(a random positive scores lower than a random other), ties counting half (Mann-Whitney)."""
    assert lower_is_positive and others, "AUC needs both members and non-members"
    wins = sum(1.0 if a < b else 0.5 if a == b else 0.0 for a in lower_is_positive for b in others)
    return wins / (len(lower_is_positive) * len(others))


def membership_inference(probe: ModelProbe) -> dict[str, float]:
    """Loss-threshold attack (module docstring); accuracy at the median loss as the threshold, on equal-sized sets."""
    n = min(len(probe.members), len(probe.nonmembers))
    members = record_losses(probe.model, probe.tokenizer, probe.members[:n])
    others = record_losses(probe.model, probe.tokenizer, probe.nonmembers[:n])
    threshold = sorted(members + others)[len(members + others) // 2]
    right = sum(1 for x in members if x < threshold) + sum(1 for x in others if x >= threshold)
    value = auc(members, others)
    return {"membership_auc": value, "membership_accuracy": right / (2 * n), "membership_advantage": value - 0.5}


def _chance(cases: Sequence[AttributeCase]) -> float:
    return Counter(c.true for c in cases).most_common(1)[0][1] / len(cases)


def attribute_inference_text(text: str, cases: Sequence[AttributeCase], values: Sequence[str]) -> dict[str, float]:
    """Guess each key's value as the candidate value named most often in the same line or sentence as the key; a key
    named nowhere gets the best blind guess (it counts as right at the chance rate)."""
    pieces = [p for p in re.split(r"[\n.;]", text.lower()) if p.strip()]
    chance, right = _chance(cases), 0.0
    for case in cases:
        near = [
            v
            for p in pieces
            if re.search(rf"\b{re.escape(case.key.lower())}\b", p)
            for v in values
            if re.search(rf"\b{re.escape(v.lower())}\b", p)
        ]
        if near:
            right += Counter(near).most_common(1)[0][0] == case.true.lower()
        else:  # no evidence: the attacker's best blind guess, right with the chance rate
            right += chance
    accuracy = right / len(cases)
    return {"attribute_accuracy": accuracy, "attribute_chance": chance, "attribute_advantage": accuracy - chance}


@torch.no_grad()
def attribute_inference_model(probe: ModelProbe, cases: Sequence[AttributeCase]) -> dict[str, float]:
    """Guess each key's value as the candidate whose answer record the model finds most likely (module docstring)."""
    right = 0
    for case in cases:
        values = [v for v, _ in case.candidates]
        losses = record_losses(probe.model, probe.tokenizer, [r for _, r in case.candidates])
        right += values[min(range(len(values)), key=losses.__getitem__)] == case.true
    accuracy, chance = right / len(cases), _chance(cases)
    return {"attribute_accuracy": accuracy, "attribute_chance": chance, "attribute_advantage": accuracy - chance}


@torch.no_grad()
def canaries_extracted(probe: ModelProbe, canaries: Mapping[str, str]) -> list[str]:
    """Fields of the canaries the model completes greedily from the context before them in a private record."""
    from training.data import tokenize_record

    found = []
    device = next(probe.model.parameters()).device
    for name, value in canaries.items():
        for record in probe.canary_contexts.get(name, [])[:2]:
            (episode, *_) = tokenize_record(record, probe.tokenizer)
            text = probe.tokenizer.decode(episode.input_ids)
            at = text.find(value)
            if at < 0:
                continue
            prompt = probe.tokenizer(text[:at], add_special_tokens=False, return_tensors="pt")["input_ids"].to(device)
            budget = len(probe.tokenizer(value, add_special_tokens=False)["input_ids"]) + 4
            out = probe.model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                max_new_tokens=budget,
                do_sample=False,
                pad_token_id=probe.tokenizer.pad_token_id,
            )
            if value.lower() in probe.tokenizer.decode(out[0, prompt.shape[1] :]).lower():
                found.append(name)
                break
    return sorted(found)


def export_check(
    artifact: Artifact,
    *,
    canaries: Mapping[str, str],
    attributes: Sequence[AttributeCase] = (),
    values: Sequence[str] = (),
    probe: ModelProbe | None = None,
    max_advantage: float = 1.0,
) -> GateResult:
    """Every check on one artifact; `passed` is False when a canary is found, the content has a problem
    (content_problems) or an advantage passes max_advantage."""
    found = canaries_in_bytes(artifact.payload, canaries)
    leakage: dict[str, float] = {}
    if artifact.kind == "adapter":
        assert probe is not None, "an adapter export is checked against the model it adapts: give a probe"
        found = sorted(set(found) | set(canaries_extracted(probe, canaries)))
        leakage.update(membership_inference(probe))
        if attributes:
            leakage.update(attribute_inference_model(probe, attributes))
    elif attributes:
        leakage.update(attribute_inference_text(artifact.payload.decode(errors="replace"), attributes, values))
    reasons = [f"canary {name!r} appears in the {artifact.kind} export" for name in found]
    reasons += content_problems(artifact)
    for name in ("membership_advantage", "attribute_advantage"):
        if leakage.get(name, 0.0) > max_advantage:
            reasons.append(f"{name}={leakage[name]:.3f} is above max_advantage={max_advantage}")
    leakage["canaries_found"] = float(len(found))
    return GateResult(artifact.kind, artifact.sha256, len(artifact.payload), not reasons, found, leakage, reasons)


def export_gate(artifact: Artifact, **checks: Any) -> GateResult:
    """export_check, raising ExportRefused (code canary_found, content_refused or leakage, naming the canaries' fields)
    when it does not pass."""
    result = export_check(artifact, **checks)
    if not result.passed:
        code = "canary_found" if result.canaries_found else "content_refused" if content_problems(artifact) else "leakage"
        raise ExportRefused(
            code, f"export of {artifact.kind} from {artifact.source} refused: " + "; ".join(result.reasons), result.canaries_found
        )
    return result


# --- what a receiver can check without the sender's secrets -------------------------------------------------------

MAX_SKILLS, MAX_SKILL_CHARS, MAX_STATS, MAX_TENSORS = 1000, 4000, 64, 4096
_STAT_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def _json_payload(artifact: Artifact) -> Any:
    try:
        return json.loads(artifact.payload.decode(), parse_constant=lambda name: float("nan"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None


def _skills_problems(artifact: Artifact) -> list[str]:
    body = _json_payload(artifact)
    if not isinstance(body, dict) or set(body) != {"skills"} or not isinstance(body["skills"], list):
        return ['skills: the payload is not the JSON object {"skills": [text, ...]}']
    skills = body["skills"]
    if len(skills) > MAX_SKILLS:
        return [f"skills: {len(skills)} skills; at most {MAX_SKILLS}"]
    problems = []
    for i, skill in enumerate(skills):
        if not isinstance(skill, str) or not 0 < len(skill) <= MAX_SKILL_CHARS:
            problems.append(f"skills[{i}]: a skill is text of 1 to {MAX_SKILL_CHARS} characters")
        elif shapes := shapes_found(skill):
            problems.append(f"skills[{i}]: holds {', '.join(shapes)}-shaped text")  # never the value itself
    return problems


def _stats_problems(artifact: Artifact) -> list[str]:
    body = _json_payload(artifact)
    if not isinstance(body, dict) or not 0 < len(body) <= MAX_STATS:
        return [f"stats: the payload is not a JSON object of 1 to {MAX_STATS} numbers"]
    return [
        f"stats.{name[:64]}: a statistic is a lower-case name with a finite number"
        for name, value in body.items()
        if not _STAT_NAME.match(name) or isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value)
    ]


def _adapter_problems(artifact: Artifact) -> list[str]:
    from safetensors.torch import load

    try:
        length = int.from_bytes(artifact.payload[:8], "little")
        header = json.loads(artifact.payload[8 : 8 + length]) if 0 < length < len(artifact.payload) else None
        tensors = load(artifact.payload) if isinstance(header, dict) else {}
    except Exception:  # safetensors raises its own error types for every malformed file
        header, tensors = None, {}
    if not isinstance(header, dict) or not tensors:
        return ["adapter: the payload is not a safetensors file of LoRA tensors"]
    problems = []
    if len(tensors) > MAX_TENSORS:
        problems.append(f"adapter: {len(tensors)} tensors; at most {MAX_TENSORS}")
    odd = sorted(name for name, t in tensors.items() if "lora_" not in name or not t.is_floating_point())
    if odd:
        problems.append(f"adapter: {len(odd)} tensor(s) are not floating-point LoRA weights, e.g. {odd[0][:100]!r}")
    if shapes := shapes_found(json.dumps(header.get("__metadata__") or {})):
        problems.append(f"adapter: its metadata holds {', '.join(shapes)}-shaped text")
    return problems


def content_problems(artifact: Artifact) -> list[str]:
    """What anyone can check of an artifact without its sender's secrets (a receiving installation does, and the
    sender again before it pushes): the kind's structure, and no credential- or PII-shaped text in a text artifact.
    Empty when it passes; each problem names where, never the offending value."""
    check = {"skills": _skills_problems, "stats": _stats_problems, "adapter": _adapter_problems}[artifact.kind]
    return check(artifact)
