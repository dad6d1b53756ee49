"""A federation: rounds in which participants train locally, export through the gate, the aggregator combines, and
participants adapt. Resumable per round: a round whose metrics.json exists is read back, not run again.

    summary = federation_run(participants, FederationSettings(mode="fedavg", rounds=2, base=path, ...), out=Path(...))

Modes
    local     every participant trains on its own records only; nothing leaves (the baseline).
    fedavg    every participant starts the round from the shared model, trains a LoRA adapter on its records and
              exports it; FedAvg (weighted by training examples) over the exports the gate let through is merged
              into the next shared model, which every participant adapts to (it is their next start and their model).
    skills    weights stay local (as `local`); each participant exports the skills distilled from its passed records;
              the merged, deduplicated skills are prepended to every participant's system prompt.
Every federated mode also exports aggregate statistics when the participant's policy shares "stats".

Received artifacts (`received`: adapters or skills another installation pushed and an owner here accepted) join
the first round's aggregation beside the participants' exports: a received adapter enters FedAvg weighted by the
examples its manifest states (at most the largest participant's: a claim cannot outweigh everyone here), when its tensor names and shapes match the participants' (else it is left out and
not counted); received skills are merged with the participants'. Later rounds carry them on in the shared model
or the merged skills. The metric "received" counts the ones used.

Folders: out/round-NNN/ holds artifacts/<participant>-<kind>.bin with .json manifests and gate results, the
aggregate (aggregate.bin / skills.json / stats.json), models/<participant or shared>/ (the merged start of the next
round; older rounds' merged models are pruned) and metrics.json, written last. Metrics per round: utility per
participant (greedy mean composite on its own task's utility seeds), canaries found, refused exports, membership
and attribute advantage over chance (the largest over exports), bytes up (exports) and down (aggregate x receivers).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from environments.records import record_score
from training.federation.aggregate import fedavg, skills_merge, stats_merge, updates_screen
from training.federation.artifacts import Artifact, adapter_artifact, adapter_tensors, skills_artifact, skills_of, stats_artifact
from training.federation.checks import ExportRefused, GateResult, ModelProbe, export_gate
from training.federation.participants import Participant
from training.policies.quoting import quoted_block

MODES = ("local", "fedavg", "skills")
SHARED = "shared"


@dataclass
class FederationSettings:
    mode: str
    base: str  # the start checkpoint every participant shares
    rounds: int = 2
    local_steps: int = 4  # SFT optimizer steps per participant per round
    lora_r: int = 4
    lora_alpha: int = 16
    learning_rate: float = 1e-3
    batch_size: int = 4
    seed: int = 0
    utility_seeds: list[int] = field(default_factory=lambda: list(range(50_000, 50_008)))
    max_turns: int = 4
    max_new_tokens: int = 48
    probe_records: int = 8  # members and non-members each, for membership inference
    max_advantage: float = 1.0  # the gate refuses an export whose leakage advantage passes this (1.0: never)
    compact_tools: bool = False
    max_result_chars: int = 0
    max_update_norm: float = 0.0  # fedavg: an adapter whose L2 norm passes this is clipped to it; 0: update_norm_factor x the median
    update_norm_factor: float = 3.0  # the bound relative to the round's median adapter norm, when max_update_norm is 0

    def __post_init__(self) -> None:
        assert self.mode in MODES, f"mode={self.mode!r}: one of {', '.join(MODES)}"
        assert self.max_update_norm >= 0 and self.update_norm_factor >= 1, (
            f"max_update_norm={self.max_update_norm} must be >= 0 and update_norm_factor={self.update_norm_factor} >= 1"
        )
        assert self.rounds >= 1 and self.local_steps >= 1 and self.lora_r >= 1, f"rounds, local_steps, lora_r must be >= 1: {self}"


def _round_dir(out: Path, r: int) -> Path:
    return out / f"round-{r:03d}"


def _start_model(settings: FederationSettings, out: Path, r: int, name: str) -> str:
    if r == 0:
        return settings.base
    return str(_round_dir(out, r - 1) / "models" / (SHARED if settings.mode == "fedavg" else name))


def _train(settings: FederationSettings, participant: Participant, start: str, folder: Path, r: int) -> str:
    """SFT with LoRA (training/recipes/sft.py) on the participant's records from `start`: the adapter folder."""
    from training import run_recipe

    folder.mkdir(parents=True, exist_ok=True)
    data = folder / "records.jsonl"  # private: stays in the participant's folder
    data.write_text("".join(json.dumps(rec) + "\n" for rec in participant.records))
    result = run_recipe(
        "sft",
        {
            "model": start,
            "data": str(data),
            "output_dir": str(folder / "sft"),
            "max_steps": settings.local_steps,
            "lora_r": settings.lora_r,
            "lora_alpha": settings.lora_alpha,
            "learning_rate": settings.learning_rate,
            "batch_size": settings.batch_size,
            "seed": settings.seed * 1000 + r,
            "device": "auto",
            "compact_tools": settings.compact_tools,
            "max_result_chars": settings.max_result_chars,
        },
    )
    assert result.final_checkpoint, f"participant {participant.name}: SFT saved no checkpoint"
    return result.final_checkpoint


def _with_adapter(start: str, adapter: str) -> tuple[Any, Any]:
    from peft import PeftModel

    from training.modeling import load_model

    model, tokenizer = load_model(start, trainable=False)
    return PeftModel.from_pretrained(model, adapter).eval(), tokenizer


def _merge(start: str, adapter: str, target: Path) -> str:
    """start + adapter merged into a plain checkpoint folder (the next round's start)."""
    model, tokenizer = _with_adapter(start, adapter)
    target.mkdir(parents=True, exist_ok=True)
    model.merge_and_unload().save_pretrained(target)
    tokenizer.save_pretrained(target)
    return str(target)


def _averaged_adapter(template: str, tensors: dict[str, Any], target: Path) -> str:
    """An adapter folder: the trained adapter's config with the averaged tensors."""
    from safetensors.torch import save_file

    target.mkdir(parents=True, exist_ok=True)
    shutil.copy(Path(template) / "adapter_config.json", target / "adapter_config.json")
    save_file(tensors, str(target / "adapter_model.safetensors"))
    return str(target)


def _adapter_state(adapter: str) -> dict[str, Any]:
    from safetensors.torch import load_file

    return load_file(str(Path(adapter) / "adapter_model.safetensors"))


def _write_export(folder: Path, artifact: Artifact, gate: GateResult | None, refusal: ExportRefused | None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    stem = folder / f"{artifact.source}-{artifact.kind}"
    if refusal is None:  # a refused artifact is not kept where exports are: only its manifest and the refusal
        stem.with_suffix(".bin").write_bytes(artifact.payload)
    record = {
        "manifest": artifact.manifest,
        "gate": gate.as_json() if gate else None,
        "refused": None if refusal is None else {"code": refusal.code, "message": refusal.message, "fields": refusal.fields},
    }
    stem.with_suffix(".json").write_text(json.dumps(record, indent=1))


def skills_prompt(system: str, skills: Sequence[str]) -> str:
    """The system prompt with the shared skills after it, quoted as user content (training.policies.quoting)."""
    block = quoted_block("Skills shared by other projects", skills)
    return f"{system}\n\n{block}" if block else system


def utility(settings: FederationSettings, model_path: str, task: str, skills: Sequence[str] = ()) -> float:
    """Greedy mean composite of the model on the task's utility seeds, skills (if any) prepended to its system prompt."""
    import torch

    from environments.registry import make
    from training.data import PromptStyle
    from training.modeling import load_model
    from training.sampling import rollout_episodes, system_prompt_for

    model, tokenizer = load_model(model_path, trainable=False)
    system = system_prompt_for(make(task, settings.utility_seeds[0]))
    system = skills_prompt(system, skills)
    with torch.no_grad():
        records = rollout_episodes(
            model,
            tokenizer,
            [(task, s) for s in settings.utility_seeds],
            max_turns=settings.max_turns,
            max_new_tokens=settings.max_new_tokens,
            temperature=0.0,
            system_prompt=system,
            style=PromptStyle(settings.compact_tools, settings.max_result_chars),
        )
    return sum(float(record_score(r)["composite"]) for r in records) / len(records)


def _gate(
    artifact: Artifact, participant: Participant, settings: FederationSettings, probe: ModelProbe | None
) -> tuple[GateResult | None, ExportRefused | None]:
    checks: dict[str, Any] = {
        "canaries": participant.canaries,
        "attributes": participant.attributes,
        "values": participant.candidate_values,
        "max_advantage": settings.max_advantage,
    }
    if probe is not None:
        checks["probe"] = probe
    try:
        return export_gate(artifact, **checks), None
    except ExportRefused as refusal:
        from training.federation.checks import export_check

        return export_check(artifact, **checks), refusal


def _exports(
    settings: FederationSettings, people: Sequence[Participant], r: int, starts: dict[str, str], adapters: dict[str, str], folder: Path
) -> tuple[list[tuple[Participant, Artifact]], list[GateResult]]:
    """Every artifact the mode shares, through the gate: the accepted ones and every gate result."""
    accepted, results = [], []
    for p in people:
        kinds = [k for k in (("adapter",) if settings.mode == "fedavg" else ("skills",)) + ("stats",) if k in p.share]
        for kind in kinds:
            probe = None
            if kind == "adapter":
                lora = {"r": settings.lora_r, "alpha": settings.lora_alpha}
                artifact = adapter_artifact(_adapter_state(adapters[p.name]), lora=lora, examples=len(p.records), source=p.name, round=r)
                model, tokenizer = _with_adapter(starts[p.name], adapters[p.name])
                n = settings.probe_records
                probe = ModelProbe(model, tokenizer, p.records[:n], p.holdout[:n], p.canary_contexts)
            elif kind == "skills":
                artifact = skills_artifact(p.records, redactor=p.redactor, source=p.name, round=r)
            else:
                artifact = stats_artifact(p.records, source=p.name, round=r)
            gate, refusal = _gate(artifact, p, settings, probe)
            _write_export(folder, artifact, gate, refusal)
            if gate is not None:
                results.append(gate)
            if refusal is None:
                accepted.append((p, artifact))
    return accepted, results


def received_adapters(received: Sequence[Artifact], *, like: dict[str, Any], cap: int) -> list[tuple[dict[str, Any], int]]:
    """(tensors, FedAvg weight) of each received adapter whose tensor names and shapes are those of `like` (a
    participant's adapter state); others (another base model, another rank or target modules) are left out. The
    weight is the examples the sender's manifest claims, at most `cap` (the largest participant's): a peer cannot
    outweigh every participant here by claiming more."""
    out = []
    for artifact in received:
        if artifact.kind != "adapter":
            continue
        tensors = adapter_tensors(artifact)
        if sorted(tensors) == sorted(like) and all(tensors[name].shape == like[name].shape for name in like):
            out.append((tensors, min(int(artifact.meta["examples"]), cap)))
    return out


def run_round(
    settings: FederationSettings, people: Sequence[Participant], r: int, out: Path, received: Sequence[Artifact] = ()
) -> dict[str, Any]:
    folder = _round_dir(out, r)
    starts = {p.name: _start_model(settings, out, r, p.name) for p in people}
    adapters = {p.name: _train(settings, p, starts[p.name], folder / "train" / p.name, r) for p in people}
    accepted, gates = ([], []) if settings.mode == "local" else _exports(settings, people, r, starts, adapters, folder / "artifacts")
    down, models, skills, used = 0, {}, [], 0
    screened: dict[str, float] = {}
    if settings.mode == "fedavg":
        template = adapters[people[0].name]
        shared = [(adapter_tensors(a), int(a.meta["examples"])) for _, a in accepted if a.kind == "adapter"]
        joined = received_adapters(received, like=_adapter_state(template), cap=max((w for _, w in shared), default=1))
        shared, report = updates_screen(shared + joined, max_norm=settings.max_update_norm, norm_factor=settings.update_norm_factor)
        used = len(joined)
        screened = report
        if shared:
            averaged = fedavg([tensors for tensors, _ in shared], [weight for _, weight in shared])
            adapter = _averaged_adapter(template, averaged, folder / "aggregate-adapter")
            merged = _merge(starts[people[0].name], adapter, folder / "models" / SHARED)
            down = (folder / "aggregate-adapter" / "adapter_model.safetensors").stat().st_size * len(people)
        else:  # every export refused: the shared model stays what it was
            merged = str(Path(shutil.copytree(starts[people[0].name], folder / "models" / SHARED, dirs_exist_ok=True)))
        models = {p.name: merged for p in people}
    else:
        models = {p.name: _merge(starts[p.name], adapters[p.name], folder / "models" / p.name) for p in people}
    if settings.mode == "skills":
        previous = json.loads((_round_dir(out, r - 1) / "skills.json").read_text()) if r else []
        joined_skills = [skills_of(a) for a in received if a.kind == "skills"]
        skills = skills_merge([previous, *[skills_of(a) for _, a in accepted if a.kind == "skills"], *joined_skills])
        used = len(joined_skills)
        (folder / "skills.json").write_text(json.dumps(skills, indent=1))
        down = len(json.dumps(skills).encode()) * len(people)
    stats = [json.loads(a.payload) for _, a in accepted if a.kind == "stats"]
    if stats:
        (folder / "stats.json").write_text(json.dumps(stats_merge(stats), indent=1))
        down += len(json.dumps(stats_merge(stats)).encode()) * len(people)
    metrics: dict[str, Any] = {"round": r, "mode": settings.mode}
    for p in people:
        metrics[f"utility {p.name}"] = utility(settings, models[p.name], p.task, skills)
    metrics["utility mean"] = sum(metrics[f"utility {p.name}"] for p in people) / len(people)
    metrics["canaries found"] = float(sum(len(g.canaries_found) for g in gates))
    metrics["refused exports"] = float(sum(1 for g in gates if not g.passed))
    for name in ("membership_advantage", "attribute_advantage"):
        values = [g.leakage[name] for g in gates if name in g.leakage]
        metrics[name.replace("_", " ")] = max(values) if values else 0.0
    metrics["bytes up"] = float(sum(g.bytes for g in gates))
    metrics["bytes down"] = float(down)
    metrics["bytes exchanged"] = metrics["bytes up"] + metrics["bytes down"]
    metrics["models"] = models
    metrics["skills"] = len(skills)
    metrics["received"] = float(used)
    metrics["refused non-finite updates"] = screened.get("refused_non_finite", 0.0)
    metrics["clipped updates"] = screened.get("clipped", 0.0)
    (folder / "metrics.json").write_text(json.dumps(metrics, indent=1))  # last: the round's done marker
    return metrics


def _prune(settings: FederationSettings, out: Path, finished: int) -> None:
    """Merged models of rounds before `finished` are no start of anything any more; their trained adapters stay."""
    for r in range(finished):
        shutil.rmtree(_round_dir(out, r) / "models", ignore_errors=True)


def federation_run(
    people: Sequence[Participant],
    settings: FederationSettings,
    *,
    out: Path,
    on_round: Callable[[int, dict[str, Any]], None] | None = None,
    should_stop: Callable[[], bool] | None = None,
    received: Sequence[Artifact] = (),
) -> dict[str, Any]:
    """Every round (resuming finished ones); returns {"settings", "rounds": [metrics...], "models": final per participant}.
    `received` artifacts join round 0's aggregation (module docstring)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "settings.json").write_text(json.dumps(asdict(settings), indent=1))
    rounds = []
    for r in range(settings.rounds):
        done = _round_dir(out, r) / "metrics.json"
        if done.exists():
            metrics = json.loads(done.read_text())
        else:
            if should_stop is not None and should_stop():
                break
            shutil.rmtree(_round_dir(out, r), ignore_errors=True)  # an interrupted round starts again
            metrics = run_round(settings, people, r, out, received=received if r == 0 else ())
            _prune(settings, out, r)
        rounds.append(metrics)
        if on_round is not None:
            on_round(r, metrics)
    summary = {"settings": asdict(settings), "rounds": rounds, "models": rounds[-1]["models"] if rounds else {}}
    (out / "federation.json").write_text(json.dumps(summary, indent=1))
    return summary
