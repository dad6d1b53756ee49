"""Federation as a recipe: three participants with private fedgym catalogues run rounds of local SFT with LoRA,
export through the gate and adapt to the aggregate (training/federation/rounds.py), so the experiment runner can
train and compare the modes like any other arm.

    python -m training federation --set model=PATH --set mode=fedavg --set rounds=3 --set max_steps=8 --set lora_r=4

`max_steps` is each participant's SFT steps per round. The run's final checkpoint is the first participant's model
after the last round (the shared model under fedavg); output_dir/federation.json holds every round's metrics and
every participant's final model.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

from training.config import TrainConfig
from training.config_fields import PromptStyleFields
from training.engine import Hooks, RunResult
from training.federation.rounds import MODES, FederationSettings, federation_run

RECORD_SEEDS_PER_TRAINING_SEED = 10_000  # each training seed draws its participants' private episodes from its own range


@dataclass
class FederationConfig(TrainConfig, PromptStyleFields):
    mode: str = "fedavg"
    """local (nothing shared) | fedavg (LoRA adapters averaged, weighted by examples) | skills (distilled procedures merged)."""
    participants: list[str] = field(default_factory=lambda: ["a", "b", "c"])
    """The fedgym organisations taking part (each its own private catalogue and canary)."""
    rounds: int = 3
    """Federation rounds (each: local training, export through the gate, aggregation, adaptation)."""
    records: int = 64
    """Private expert episodes each participant trains on."""
    holdout: int = 16
    """Private episodes each participant never trains on (membership inference's non-members)."""
    batch_size: int = 8
    """Episodes per SFT micro-batch."""
    utility_seed_start: int = 50_000
    """First seed of the utility episodes measured after every round (on each participant's own task)."""
    utility_episodes: int = 8
    """Utility episodes per participant per round."""
    max_turns: int = 4
    """Agent turns per utility episode."""
    max_new_tokens: int = 48
    """Token limit of one agent turn in utility episodes."""
    probe_records: int = 8
    """Members and non-members each that the membership attack compares."""
    max_advantage: float = 1.0
    """The gate refuses an export whose membership or attribute advantage over chance passes this (1.0: never)."""

    def problems(self) -> list[str]:
        out = super().problems()
        if self.mode not in MODES:
            out.append(f"mode={self.mode!r}: must be one of {', '.join(MODES)}")
        if self.lora_r < 1:
            out.append(f"lora_r={self.lora_r!r}: a federation exchanges LoRA adapters; give lora_r >= 1")
        from environments.fedgym import ORGS

        unknown = [p for p in self.participants if p not in ORGS]
        if unknown or not self.participants or len(set(self.participants)) != len(self.participants):
            out.append(f"participants={self.participants!r}: distinct names from {', '.join(ORGS)}")
        for name in ("rounds", "records", "holdout", "batch_size", "utility_episodes", "max_turns", "max_new_tokens", "probe_records"):
            if getattr(self, name) < 1:
                out.append(f"{name}={getattr(self, name)!r}: must be at least 1")
        if not 0.0 <= self.max_advantage <= 1.0:
            out.append(f"max_advantage={self.max_advantage!r}: must be in [0, 1]")
        return out

    def settings(self) -> FederationSettings:
        start = self.utility_seed_start
        return FederationSettings(
            mode=self.mode,
            base=self.model,
            rounds=self.rounds,
            local_steps=self.max_steps,
            lora_r=self.lora_r,
            lora_alpha=self.lora_alpha,
            learning_rate=self.learning_rate,
            batch_size=self.batch_size,
            seed=self.seed,
            utility_seeds=list(range(start, start + self.utility_episodes)),
            max_turns=self.max_turns,
            max_new_tokens=self.max_new_tokens,
            probe_records=self.probe_records,
            max_advantage=self.max_advantage,
            compact_tools=self.compact_tools,
            max_result_chars=self.max_result_chars,
        )


def run(config: FederationConfig, hooks: Hooks | None = None) -> RunResult:
    from training.federation.participants import fedgym_participants

    hooks = hooks or Hooks()
    out = Path(config.output_dir)
    people = fedgym_participants(
        config.participants, records=config.records, holdout=config.holdout, seed_start=config.seed * RECORD_SEEDS_PER_TRAINING_SEED
    )
    last: dict[str, float] = {}

    def on_round(r: int, metrics: dict[str, object]) -> None:
        """The round's numbers to the hooks and to metrics.jsonl, with `tokens`: the participants' SFT tokens this round
        (the runner's trained-token count reads it, as from any recipe)."""
        last.clear()
        last.update({k: float(v) for k, v in metrics.items() if isinstance(v, int | float) and k != "round"})
        rows = [
            json.loads(line)
            for f in sorted(out.glob(f"round-{r:03d}/train/*/sft/metrics.jsonl"))
            for line in f.read_text().splitlines()
            if line.strip()
        ]
        last["tokens"] = float(sum(row.get("tokens", 0.0) for row in rows))
        with (out / "metrics.jsonl").open("a") as log:
            log.write(json.dumps({"step": r + 1, **last}) + "\n")
        for name, value in last.items():
            if hooks.on_metric:
                hooks.on_metric(r + 1, name, value)

    out.mkdir(parents=True, exist_ok=True)
    (out / "metrics.jsonl").write_text("")  # rewritten from every round, finished ones included, on a resume
    (out / "federation_config.json").write_text(json.dumps(asdict(config), indent=1))
    summary = federation_run(people, config.settings(), out=out, on_round=on_round, should_stop=hooks.should_stop)
    rounds = len(summary["rounds"])
    final = summary["models"].get(config.participants[0])
    return RunResult("federation", rounds * config.max_steps, [final] if final else [], last, stopped=rounds < config.rounds)
