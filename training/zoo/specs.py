"""What a zoo model is: its shape, tokenizer, pretraining, SFT and prompt style, as one frozen spec per name.

    spec = SPECS["base-small"]; config_hash(spec)      # '3f9c0a1b2c4d': the cache key of var/zoo/<name>-<hash>/

A spec with a `parent` continues from the parent's pretrained stage (its tokenizer and weights), so a teacher
and its student share one vocabulary, as distillation needs (training.modeling.check_same_vocabulary).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from dataclasses import dataclass
from typing import Any

from training.config import ConfigError
from training.data import PromptStyle

SFT_SOURCES = ("toolgym", "phantom", "storebench", "servicedesk")
SHAPE_FIELDS = ("hidden_size", "num_layers", "num_heads", "num_kv_heads", "intermediate_size", "max_positions", "vocab_size")


@dataclass(frozen=True)
class ZooSpec:
    name: str
    """The spec's name (the cache folder is var/zoo/<name>-<hash>)."""
    seed: int = 0
    """Seeds the corpus order, the initial weights and every data order; a build is a function of its spec."""
    hidden_size: int = 256
    """Qwen3 hidden width."""
    num_layers: int = 4
    """Transformer blocks."""
    num_heads: int = 4
    """Attention heads (head_dim = hidden_size / num_heads)."""
    num_kv_heads: int = 2
    """Key/value heads (grouped-query attention); divides num_heads."""
    intermediate_size: int = 768
    """MLP width."""
    max_positions: int = 4096
    """Longest sequence the rotary embedding is configured for."""
    vocab_size: int = 8192
    """BPE vocabulary trained on the environments' own text (with the chat special tokens)."""
    corpus_chars: int = 800_000
    """Pretraining text budget per corpus source, in characters (keeps corpus generation under a minute)."""
    pretrain_steps: int = 480
    """Optimizer steps of causal-LM pretraining on packed corpus windows (0: none)."""
    pretrain_seq_len: int = 512
    """Tokens per packed pretraining window."""
    pretrain_batch: int = 8
    """Windows per pretraining step."""
    pretrain_lr: float = 2e-3
    """Peak pretraining learning rate (cosine decay after a short warmup)."""
    sft_sources: tuple[str, ...] = ("toolgym", "phantom", "storebench")
    """Environments whose training split SFT demonstrates (and the evaluation reports): toolgym, phantom, storebench,
    servicedesk (the oracle through the runner, the rule user speaking the caller's turns)."""
    sft_episodes: int = 200
    """Scripted training episodes per toolgym task, Phantom train level and service-desk template (StoreBench scenarios
    get an eighth of it)."""
    sft_steps: int = 200
    """SFT optimizer steps."""
    sft_batch: int = 4
    """Episodes per SFT step."""
    sft_lr: float = 1e-3
    """Peak SFT learning rate (cosine decay)."""
    sft_max_tokens: int = 1024
    """Supervision horizon: each SFT episode is cut to its first N tokens."""
    phantom_levels: tuple[str, ...] = ("lookup", "bridge")
    """Phantom levels whose train split the oracle demonstrates (lookup = 1 hop, bridge = 2 hops)."""
    storebench_turns: int = 6
    """StoreBench demonstrations are the smart-triage anchor's first N turns (as training/evidence/sft_valid_calls)."""
    compact_tools: bool = True
    """Tools listed as one name(args) line each in the system prompt (training.data.PromptStyle)."""
    max_result_chars: int = 400
    """Tool results cut to this many characters in training and sampling (PromptStyle)."""
    eval_episodes: int = 100
    """Episodes per evaluated task (toolgym held-out seeds, Phantom dev); StoreBench uses a fifth of it."""
    save_every: int = 100
    """Checkpoint every N steps in pretraining and SFT (what an interrupted build resumes from)."""
    parent: str | None = None
    """A spec name whose pretrained stage (tokenizer and weights) this one continues from; None: its own."""
    base_model: str | None = None
    """A packaged pretrained model of the store (training.model_store, e.g. smollm2-135m-instruct), or another zoo
    spec whose built model this one continues (e.g. smol-teacher from smol-base), that SFT starts from instead of a
    model pretrained here: no tokenizer or pretraining stage, the shape fields are the model's."""
    lora_r: int = 0
    """LoRA rank of the SFT stage on every linear layer (merged into the final folder); 0: full fine-tuning."""
    lora_alpha: int = 32
    """LoRA scaling numerator (the scale is alpha / r)."""
    cpu_bf16: bool = False
    """Train under bf16 autocast where the CPU computes bf16 natively (fp32 elsewhere)."""

    def __post_init__(self) -> None:
        problems = self.problems()
        if problems:
            raise ConfigError(f"ZooSpec {self.name!r}: " + "; ".join(problems), [p.split("=", 1)[0] for p in problems])

    def problems(self) -> list[str]:
        out: list[str] = []
        if not self.name or "/" in self.name:
            out.append(f"name={self.name!r}: must be a non-empty name without '/'")
        positive = (
            "hidden_size",
            "num_layers",
            "num_heads",
            "num_kv_heads",
            "intermediate_size",
            "max_positions",
            "pretrain_seq_len",
            "pretrain_batch",
            "sft_batch",
            "sft_max_tokens",
            "eval_episodes",
            "corpus_chars",
            "sft_episodes",
            "sft_steps",
        )
        out += [f"{name}={getattr(self, name)!r}: must be at least 1" for name in positive if getattr(self, name) < 1]
        out += [
            f"{name}={getattr(self, name)!r}: must not be negative"
            for name in ("pretrain_steps", "save_every", "seed", "max_result_chars")
            if getattr(self, name) < 0
        ]
        if self.hidden_size % self.num_heads:
            out.append(f"num_heads={self.num_heads!r}: must divide hidden_size={self.hidden_size}")
        if self.num_heads % max(self.num_kv_heads, 1):
            out.append(f"num_kv_heads={self.num_kv_heads!r}: must divide num_heads={self.num_heads}")
        if self.vocab_size < 300:
            out.append(f"vocab_size={self.vocab_size!r}: must be at least 300 (256 bytes plus the special tokens)")
        for name in ("pretrain_lr", "sft_lr"):
            if not getattr(self, name) > 0:
                out.append(f"{name}={getattr(self, name)!r}: must be positive")
        if self.pretrain_seq_len > self.max_positions or self.sft_max_tokens > self.max_positions:
            out.append(f"max_positions={self.max_positions!r}: must cover pretrain_seq_len and sft_max_tokens")
        unknown = [lv for lv in self.phantom_levels if lv not in ("lookup", "bridge", "chain", "deep", "mixed", "wide")]
        if unknown:
            out.append(f"phantom_levels={self.phantom_levels!r}: unknown level(s) {', '.join(unknown)}")
        unknown_sources = [src for src in self.sft_sources if src not in SFT_SOURCES]
        if unknown_sources or not self.sft_sources:
            out.append(f"sft_sources={self.sft_sources!r}: choose one or more of {', '.join(SFT_SOURCES)}")
        if self.parent == self.name:
            out.append(f"parent={self.parent!r}: a spec cannot be its own parent")
        if self.base_model is not None and self.parent is not None:
            out.append(f"base_model={self.base_model!r}: a spec starts from a packaged model or from a parent's pretrained stage, not both")
        if self.base_model == self.name:
            out.append(f"base_model={self.base_model!r}: a spec cannot continue itself")
        if self.lora_r < 0:
            out.append(f"lora_r={self.lora_r!r}: must not be negative")
        return out

    @property
    def prompt_style(self) -> PromptStyle:
        return PromptStyle(compact_tools=self.compact_tools, max_result_chars=self.max_result_chars)

    def shape(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in SHAPE_FIELDS}


def pretrain_fields(spec: ZooSpec) -> dict[str, Any]:
    """What the tokenizer and pretrained stage depend on: a child reuses its parent's stage when these match."""
    keys = (
        "seed",
        "corpus_chars",
        "pretrain_steps",
        "pretrain_seq_len",
        "pretrain_batch",
        "pretrain_lr",
        "max_result_chars",
        "compact_tools",
        "phantom_levels",
        "storebench_turns",
        *SHAPE_FIELDS,
    )
    return {k: getattr(spec, k) for k in keys}


def canonical(spec: ZooSpec) -> dict[str, Any]:
    """The spec as plain JSON values, with the parent's own canonical form inlined (its change changes the child)."""
    values = dataclasses.asdict(spec)
    values["phantom_levels"] = list(spec.phantom_levels)
    # Fields added after the first builds hash only when set, so a spec that leaves them alone keeps its cache key.
    for name, default in LATER_FIELDS.items():
        if values[name] == default:
            del values[name]
        else:
            values[name] = list(values[name]) if isinstance(values[name], tuple) else values[name]
    parent = parent_spec(spec)
    if parent is not None:
        values["parent"] = canonical(parent)
    if spec.base_model in SPECS:  # a zoo model continued: its spec is part of this one's identity
        values["base_model"] = canonical(dataclasses.replace(SPECS[spec.base_model], seed=spec.seed))
    return values


def parent_spec(spec: ZooSpec) -> ZooSpec | None:
    """The spec whose pretrained stage `spec` continues from (with `spec`'s seed: a --seed override moves both), or
    None. Raises ConfigError when the two disagree on anything the pretrained stage depends on."""
    if spec.parent is None:
        return None
    parent = dataclasses.replace(get_spec(spec.parent), seed=spec.seed)
    mine, theirs = pretrain_fields(spec), pretrain_fields(parent)
    differ = [k for k in mine if mine[k] != theirs[k]]
    if differ:
        raise ConfigError(
            f"ZooSpec {spec.name!r}: parent={spec.parent!r} differs in {', '.join(differ)}; a child shares the parent's "
            "tokenizer and pretrained weights, so these must match",
            differ,
        )
    return parent


def config_hash(spec: ZooSpec) -> str:
    """sha256 of the canonical JSON of the spec, 12 hex characters: the cache key."""
    text = json.dumps(canonical(spec), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:12]


LATER_FIELDS: dict[str, Any] = {
    "sft_sources": ("toolgym", "phantom", "storebench"),
    "base_model": None,
    "lora_r": 0,
    "lora_alpha": 32,
    "cpu_bf16": False,
}
_BASE = ZooSpec(name="base-small")
SPECS: dict[str, ZooSpec] = {
    "base-small": _BASE,
    # The teacher: the base's pretrained stage, then twice the demonstrations and twice the SFT steps.
    "teacher-small": dataclasses.replace(_BASE, name="teacher-small", parent="base-small", sft_episodes=400, sft_steps=400),
    # The service desk's agent: the base's pretrained stage, then SFT on the oracle's calls of the 26 training
    # templates (a whole call is 1-3k tokens, hence the longer horizon). The base never sees a call in SFT.
    "desk-small": dataclasses.replace(
        _BASE,
        name="desk-small",
        parent="base-small",
        sft_sources=("servicedesk",),
        sft_episodes=24,
        sft_steps=480,
        sft_max_tokens=2048,
        eval_episodes=32,
    ),
    # SmolLM2-135M-Instruct (the store's packaged model) fine-tuned on the training-split demonstrations of toolgym,
    # Phantom (1 and 2 hops), StoreBench's short scenarios and the service desk: the reference base of the real-model
    # experiments. LoRA r16 on every linear layer: as fast as full fine-tuning here (about 380 tokens/s either way under
    # bf16 autocast on 2 cores), and it keeps the optimizer state small.
    "smol-base": dataclasses.replace(
        _BASE,
        name="smol-base",
        base_model="smollm2-135m-instruct",
        sft_sources=("toolgym", "phantom", "storebench", "servicedesk"),
        sft_episodes=48,
        sft_steps=160,
        sft_batch=4,
        sft_lr=3e-4,
        sft_max_tokens=1536,
        max_positions=8192,
        max_result_chars=600,
        storebench_turns=8,
        lora_r=16,
        cpu_bf16=True,
        eval_episodes=20,
        save_every=20,
    ),
    # Tests only: 32 wide, one layer, a few steps.
    "smoke": ZooSpec(
        name="smoke",
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        num_kv_heads=1,
        intermediate_size=64,
        max_positions=512,
        vocab_size=400,
        corpus_chars=3000,
        pretrain_steps=4,
        pretrain_seq_len=64,
        pretrain_batch=2,
        sft_episodes=2,
        sft_steps=2,
        sft_batch=2,
        sft_max_tokens=256,
        phantom_levels=("lookup",),
        storebench_turns=2,
        eval_episodes=2,
        save_every=2,
    ),
}


# The real-model teacher: smol-base trained on for another 160 steps over twice its demonstrations (smol-base's 48
# episodes per task and 48 more), so it has seen twice the data for twice the steps at the cost of one more build.
# Its supervision horizon is 4,096 tokens where smol-base's is 1,536: a StoreBench demonstration of 8 turns is about
# 3,500 tokens, so smol-base saw only its first 3-4 turns (training/README.md), and the teacher sees them all.
SPECS["smol-teacher"] = dataclasses.replace(
    SPECS["smol-base"], name="smol-teacher", base_model="smol-base", sft_episodes=96, sft_max_tokens=4096
)
ALL_LINEAR = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


def get_spec(name: str) -> ZooSpec:
    if name not in SPECS:
        raise ConfigError(f"unknown zoo spec {name!r}; choose one of {', '.join(SPECS)}", ["name"])
    return SPECS[name]
