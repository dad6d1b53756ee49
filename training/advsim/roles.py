"""The two proposer roles of AdvSim2Real: a factorised categorical policy trained by group-relative REINFORCE.

    adversary = CategoricalRole("adversary", adapter.adversary_heads)   # adapters.py: one per environment
    choices = adversary.sample(4, generator)                  # [{"goal": ..., "framing": ..., ...}]
    metrics = adversary.update(choices, rewards=[1, 0, 0, 1], lr=0.5, entropy_coef=0.01)
    adapter.injection(choices[0])                             # the environment's options["injection"]

Each head (goal, framing, placement, style for the adversary; the task generator's knobs for the curriculum) has
its own logits; a proposal draws one value per head independently. The update is GRPO's without a ratio (the
proposals of a round are sampled from the current logits, so the ratio is 1): advantages are the round's rewards
less their mean, over their std, and the loss is -mean(advantage x log-prob) - entropy_coef x entropy, one plain
gradient step (no optimizer state, so a resumed run continues exactly from the logits saved in the round file).
A round whose rewards are all equal moves nothing but the entropy term.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

# The adversary's styles, shared by every environment (its framings are the environment's: adapters.py). None is
# one of an attack axis' own styles (direct, authority, ...): those stay the fixed attack set never seen in training.
STYLES: dict[str, str] = {
    "plain": "{text}",
    "urgent": "URGENT - ACTION REQUIRED TODAY. {text}",
    "courteous": "Hello, and thank you for your help. {text} Many thanks in advance.",
    "explicit_call": "{text} (Tool: {call}.)",
}


def compose_text(framing: str, style: str) -> str:
    """A framing's text in a style; "{action}" and "{call}" stay for the environment to fill."""
    return STYLES[style].replace("{text}", framing)


@dataclass
class CategoricalRole:
    name: str
    heads: dict[str, tuple[str, ...]]
    logits: dict[str, torch.Tensor] | None = None

    def __post_init__(self) -> None:
        assert all(self.heads.values()), f"{self.name}: every head needs at least one value: {self.heads}"
        if self.logits is None:
            self.logits = {head: torch.zeros(len(values)) for head, values in self.heads.items()}

    def _logits(self) -> dict[str, torch.Tensor]:
        assert self.logits is not None
        return self.logits

    def probabilities(self) -> dict[str, dict[str, float]]:
        return {h: dict(zip(self.heads[h], torch.softmax(v, 0).tolist(), strict=True)) for h, v in self._logits().items()}

    def sample(self, n: int, generator: torch.Generator) -> list[dict[str, str]]:
        """n proposals, one value per head each, drawn with `generator` (a pure function of its seed)."""
        picks = {h: torch.multinomial(torch.softmax(v, 0), n, replacement=True, generator=generator) for h, v in self._logits().items()}
        return [{h: self.heads[h][int(picks[h][i])] for h in self.heads} for i in range(n)]

    def mode(self) -> dict[str, str]:
        """The most likely proposal (ties: the first value), the role's greedy play in evaluation."""
        return {h: self.heads[h][int(torch.argmax(v))] for h, v in self._logits().items()}

    def log_prob(self, choices: list[dict[str, str]], logits: dict[str, torch.Tensor] | None = None) -> torch.Tensor:
        """(n,) log-probability of each proposal under `logits` (default: the role's own)."""
        logits = logits if logits is not None else self._logits()
        total = torch.zeros(len(choices))
        for head, values in self.heads.items():
            logp = torch.log_softmax(logits[head], 0)
            total = total + logp[torch.tensor([values.index(c[head]) for c in choices])]
        return total

    def update(self, choices: list[dict[str, str]], rewards: list[float], *, lr: float, entropy_coef: float) -> dict[str, float]:
        """One group-relative REINFORCE step on the proposals and their rewards; returns metrics prefixed by role."""
        assert len(choices) == len(rewards) and choices, f"{self.name}: {len(choices)} proposals for {len(rewards)} rewards"
        r = torch.tensor(rewards, dtype=torch.float32)
        spread = float(r.std()) if len(rewards) > 1 else 0.0
        advantages = (r - r.mean()) / (spread + 1e-6) if spread > 0 else torch.zeros_like(r)
        leaves = {h: v.detach().clone().requires_grad_(True) for h, v in self._logits().items()}
        logp = self.log_prob(choices, leaves)
        entropy = sum(-(torch.softmax(v, 0) * torch.log_softmax(v, 0)).sum() for v in leaves.values())
        loss = -(advantages * logp).mean() - entropy_coef * entropy
        loss.backward()  # type: ignore[union-attr]
        self.logits = {h: (v - lr * v.grad).detach() for h, v in leaves.items()}  # type: ignore[operator]
        return {
            f"{self.name}_reward_mean": float(r.mean()),
            f"{self.name}_reward_std": spread,
            f"{self.name}_loss": float(loss.detach()),  # type: ignore[union-attr]
            f"{self.name}_entropy": float(entropy.detach()),  # type: ignore[union-attr]
        }

    def state(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "heads": {h: list(v) for h, v in self.heads.items()},
            "logits": {h: v.tolist() for h, v in self._logits().items()},
        }

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> CategoricalRole:
        heads = {h: tuple(v) for h, v in state["heads"].items()}
        return cls(state["name"], heads, {h: torch.tensor(v, dtype=torch.float32) for h, v in state["logits"].items()})
