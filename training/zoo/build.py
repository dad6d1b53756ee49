"""Building a zoo model, stage by stage, cached under var/zoo/<name>-<hash>/:

    tokenizer/   corpus.json (what the corpus read), tokenizer files, tokens.pt (the corpus as one token stream)
    pretrain/    init/ (random weights), run/ (engine checkpoints, metrics.jsonl), done.json
    sft/         demos.jsonl (scripted training episodes), run/, done.json
    final/       the SFT model as a from_pretrained folder, plus zoo.json (spec, hash, style, stage times, evaluation)

    folder = build(get_spec("base-small"))       # a finished build returns at once; an interrupted one resumes

A stage is finished when its done.json exists. An unfinished training stage resumes from its last complete
checkpoint (the engine restores weights, optimizer, scheduler and RNG), so an interrupted and resumed build ends
with the weights of a straight one. A spec with a parent takes the parent's tokenizer and pretrained stage.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from environments.records import Record, record_score
from training import run_recipe
from training.config import ConfigError
from training.engine import Hooks, RunResult, trim_metrics
from training.scripted import anchor_episode, scripted_episodes
from training.zoo import pretrain
from training.zoo.corpus import build_corpus, demo_policy, toolgym_sft_tasks, training_task_ids
from training.zoo.evaluate import evaluate_model, targets_reached
from training.zoo.specs import SPECS, ZooSpec, canonical, config_hash, parent_spec

REPO_ROOT = Path(__file__).resolve().parents[2]
MODEL_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "training_config.json",
)


def var_root() -> Path:
    """The repo's var/ folder, or PRACTICUM_VAR_DIR when set (the lab's setting for the same root)."""
    return Path(os.environ.get("PRACTICUM_VAR_DIR") or REPO_ROOT / "var")


def build_folder(spec: ZooSpec) -> Path:
    return var_root() / "zoo" / f"{spec.name}-{config_hash(spec)}"


class Interrupted(RuntimeError):
    """The build stopped on request (BuildControl.stop_after_checkpoints) before finishing a stage."""


@dataclass
class BuildControl:
    """How a caller watches and interrupts a build (tests interrupt one to check resuming)."""

    say: Callable[[str], None] = print  # progress lines
    stop_after_checkpoints: int = 0  # stop the training stage in progress after this many new checkpoints (0: never)
    log_every: int = 50  # a progress line every N training steps


def _done(stage: Path) -> dict[str, Any] | None:
    marker = stage / "done.json"
    return json.loads(marker.read_text()) if marker.exists() else None


def _finish(stage: Path, **values: Any) -> dict[str, Any]:
    (stage / "done.json").write_text(json.dumps(values, indent=2))
    return values


def last_checkpoint(run_dir: Path) -> Path | None:
    """The latest complete engine checkpoint (trainer_state.json is written last) in a run folder, or None."""
    complete = sorted(p for p in run_dir.glob("step-*") if (p / "trainer_state.json").exists())
    return complete[-1] if complete else None


def _train(recipe: str, values: dict[str, Any], control: BuildControl, label: str, started: float) -> str:
    """Run (or resume) one engine run to its end; returns its final checkpoint."""
    run_dir = Path(values["output_dir"])
    resume = last_checkpoint(run_dir)
    # A run killed before its first checkpoint starts over: its metric lines go (step 0), as those past a checkpoint do.
    step = json.loads((resume / "trainer_state.json").read_text())["step"] if resume is not None else 0
    trim_metrics(run_dir, step)
    if resume is not None:
        control.say(f"[{label}] resuming from {resume.name}")
        values = {**values, "resume_from": str(resume)}
    saved: list[int] = []

    def on_metric(step: int, name: str, value: float) -> None:
        if name == "loss" and (step % control.log_every == 0 or step == values["max_steps"]):
            control.say(f"[{label}] step {step}/{values['max_steps']} loss {value:.4f} ({time.time() - started:.0f}s)")

    hooks = Hooks(
        on_metric=on_metric,
        on_checkpoint=lambda step, folder: saved.append(step),
        progress=False,
        should_stop=lambda: bool(control.stop_after_checkpoints) and len(saved) >= control.stop_after_checkpoints,
    )
    result: RunResult
    if recipe == "pretrain":
        result = pretrain.run(pretrain.PretrainConfig(**values), hooks)
    else:
        result = run_recipe(recipe, values, on_metric=on_metric, on_checkpoint=hooks.on_checkpoint, should_stop=hooks.should_stop)
    if result.stopped:
        raise Interrupted(f"{label} stopped at step {result.steps} of {values['max_steps']}")
    assert result.final_checkpoint is not None
    return result.final_checkpoint


def _tokenizer_stage(spec: ZooSpec, folder: Path, control: BuildControl) -> dict[str, Any]:
    stage = folder / "tokenizer"
    if done := _done(stage):
        return done
    started = time.time()
    from training.tiny import build_tokenizer

    corpus = build_corpus(spec)
    control.say(f"[tokenizer] corpus: {len(corpus.documents)} documents, {corpus.chars:,} characters ({time.time() - started:.0f}s)")
    tokenizer = build_tokenizer(spec.vocab_size, extra_corpus=tuple(corpus.documents))
    stage.mkdir(parents=True, exist_ok=True)
    tokenizer.save_pretrained(stage)
    ids: list[int] = []
    for document in corpus.documents:
        ids += tokenizer(document, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    torch.save(torch.tensor(ids, dtype=torch.long), stage / "tokens.pt")
    (stage / "corpus.json").write_text(json.dumps({"chars": corpus.chars, "tokens": len(ids), "sources": corpus.sources}, indent=1))
    control.say(f"[tokenizer] {len(tokenizer)} tokens in the vocabulary, corpus {len(ids):,} tokens ({time.time() - started:.0f}s)")
    return _finish(stage, wall_s=round(time.time() - started, 1), tokens=len(ids), chars=corpus.chars)


def init_model(spec: ZooSpec, tokenizer_dir: Path, out: Path) -> Path:
    """A randomly initialised Qwen3 model of the spec's shape (seeded) with the stage's tokenizer, saved to `out`."""
    from transformers import AutoModelForCausalLM, AutoTokenizer, GenerationConfig, Qwen3Config

    tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir), local_files_only=True)
    config = Qwen3Config(
        vocab_size=len(tokenizer),
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads,
        num_key_value_heads=spec.num_kv_heads,
        head_dim=spec.hidden_size // spec.num_heads,
        max_position_embeddings=spec.max_positions,
        tie_word_embeddings=True,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=None,
    )
    torch.manual_seed(spec.seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.generation_config = GenerationConfig(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _pretrain_stage(spec: ZooSpec, folder: Path, control: BuildControl) -> dict[str, Any]:
    stage = folder / "pretrain"
    if done := _done(stage):
        return done
    started = time.time()
    init = stage / "init"
    if not (init / "model.safetensors").exists():
        init_model(spec, folder / "tokenizer", init)
    final = str(init)
    if spec.pretrain_steps:
        values = {
            "model": str(init),
            "tokens": str(folder / "tokenizer" / "tokens.pt"),
            "seq_len": spec.pretrain_seq_len,
            "batch_size": spec.pretrain_batch,
            "max_steps": spec.pretrain_steps,
            "learning_rate": spec.pretrain_lr,
            "lr_schedule": "cosine",
            "warmup_steps": min(30, spec.pretrain_steps // 10),
            "weight_decay": 0.01,
            "seed": spec.seed,
            "save_every": spec.save_every,
            "output_dir": str(stage / "run"),
            "device": "cpu",
        }
        final = _train("pretrain", values, control, f"{spec.name} pretrain", started)
    return _finish(stage, wall_s=round(time.time() - started, 1), final=final)


def demonstrations(spec: ZooSpec) -> list[Record]:
    """Scripted episodes of the training splits of `spec.sft_sources` (seeds from 0), kept where they passed:
    toolgym's expert (all tasks but guess), Phantom's oracle, the service desk's oracle with the rule user as the
    caller; and StoreBench's smart triage cut to its first turns (an eighth as many per scenario: its episodes are
    long and alike)."""
    records: list[Record] = []
    seeds = range(spec.sft_episodes)
    tasks = {"toolgym": toolgym_sft_tasks(), "phantom": [f"phantom/{level}-train" for level in spec.phantom_levels]}
    for task in [t for source in spec.sft_sources for t in tasks.get(source, [])]:
        episodes = [scripted_episodes(demo_policy(task, s), task, [s], max_turns=24)[0] for s in seeds]
        records += [r for r in episodes if record_score(r)["passed"]]
    if "servicedesk" in spec.sft_sources:
        for task in training_task_ids("servicedesk"):
            episodes = [anchor_episode("oracle", task, s) for s in seeds]
            records += [r for r in episodes if record_score(r)["passed"]]
    if "storebench" in spec.sft_sources:
        for task in training_task_ids("storebench"):
            few = range(max(1, spec.sft_episodes // 8))
            records += [scripted_episodes(demo_policy(task, s), task, [s], max_turns=spec.storebench_turns)[0] for s in few]
    return records


def _sft_stage(spec: ZooSpec, folder: Path, start_from: str, control: BuildControl) -> dict[str, Any]:
    stage = folder / "sft"
    if done := _done(stage):
        return done
    started = time.time()
    stage.mkdir(parents=True, exist_ok=True)
    demos = stage / "demos.jsonl"
    if not demos.exists():
        records = demonstrations(spec)
        demos.with_suffix(".tmp").write_text("".join(json.dumps(r) + "\n" for r in records))
        demos.with_suffix(".tmp").rename(demos)
        control.say(f"[{spec.name} sft] {len(records)} demonstrations ({time.time() - started:.0f}s)")
    if spec.lora_r:
        from training.zoo.specs import ALL_LINEAR

        lora = {"lora_r": spec.lora_r, "lora_alpha": spec.lora_alpha, "lora_target_modules": list(ALL_LINEAR)}
    else:
        lora = {}
    values = {
        **lora,
        "cpu_bf16": spec.cpu_bf16,
        "model": start_from,
        "data": str(demos),
        "max_steps": spec.sft_steps,
        "learning_rate": spec.sft_lr,
        "lr_schedule": "cosine",
        "warmup_steps": min(20, spec.sft_steps // 10),
        "batch_size": spec.sft_batch,
        "max_tokens": spec.sft_max_tokens,
        "compact_tools": spec.compact_tools,
        "max_result_chars": spec.max_result_chars,
        "seed": spec.seed,
        "save_every": spec.save_every,
        "output_dir": str(stage / "run"),
        "device": "cpu",
    }
    final = _train("sft", values, control, f"{spec.name} sft", started)
    return _finish(stage, wall_s=round(time.time() - started, 1), final=final, start_from=start_from)


def _save_merged(adapter: Path, base: str, out: Path, tokenizer_from: Path | None = None) -> None:
    """An SFT stage trained with LoRA ends in an adapter folder; the zoo's final folder is a plain model, so the
    adapter is merged into the base's weights (saved in the base's dtype) with the adapter's tokenizer beside it (or
    `tokenizer_from`'s: a kept adapter, training/zoo/adapters.py, carries no tokenizer.json)."""
    from peft import PeftModel
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from training.modeling import pretrained_kwargs

    network: Any = AutoModelForCausalLM.from_pretrained(base, dtype="auto", **pretrained_kwargs(base))
    merged = PeftModel.from_pretrained(network, str(adapter)).merge_and_unload()
    merged.save_pretrained(out)
    AutoTokenizer.from_pretrained(str(tokenizer_from or adapter), local_files_only=True).save_pretrained(out)


def _final_stage(spec: ZooSpec, folder: Path, sft_final: str, start_from: str, walls: dict[str, float], control: BuildControl) -> Path:
    final = folder / "final"
    if (final / "zoo.json").exists():
        return final
    started = time.time()
    staging = folder / "final.tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    if (Path(sft_final) / "adapter_config.json").exists():
        _save_merged(Path(sft_final), start_from, staging)
    for name in MODEL_FILES:
        if (Path(sft_final) / name).exists() and not (staging / name).exists():
            shutil.copy2(Path(sft_final) / name, staging / name)
    control.say(f"[{spec.name} eval] evaluating")
    results = evaluate_model(str(staging), spec)
    walls = {**walls, "eval": round(time.time() - started, 1)}
    parent = parent_spec(spec)
    manifest = {
        "name": spec.name,
        "hash": config_hash(spec),
        "spec": canonical(spec),
        "prompt_style": {
            "compact_tools": spec.compact_tools,
            "max_result_chars": spec.max_result_chars,
            "max_prompt_tokens": spec.max_positions - 128,
        },
        "base_model": _base_model_manifest(spec),
        "parent": None if parent is None else {"name": parent.name, "hash": config_hash(parent)},
        "parameters": _parameter_count(staging),
        "wall_s": walls,
        "evaluation": results,
        "targets_reached": targets_reached(results),
    }
    (staging / "zoo.json").write_text(json.dumps(manifest, indent=2))
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
    return final


def base_model_folder(spec: ZooSpec) -> Path:
    """The folder SFT starts from: the store's packaged model, or the built final folder of the zoo spec it continues
    (a ConfigError naming the build command when that is not built yet; a ModelStoreError naming `make setup`)."""
    from training.model_store import installed_path

    assert spec.base_model is not None
    if spec.base_model not in SPECS:
        return installed_path(spec.base_model)
    continued = dataclasses.replace(SPECS[spec.base_model], seed=spec.seed)
    final = build_folder(continued) / "final"
    if not (final / "zoo.json").exists():
        from training.zoo.adapters import materialize

        materialize(continued)  # kept in the repository: made here in seconds
    if not (final / "zoo.json").exists():
        raise ConfigError(
            f"{spec.name} continues {spec.base_model}, which is not built here: run `python -m training.zoo build {spec.base_model}` first",
            ["base_model"],
        )
    return final


def _base_model_manifest(spec: ZooSpec) -> dict[str, Any] | None:
    """Which packaged model (and which exact weights) a spec fine-tuned, for the final folder's zoo.json."""
    if spec.base_model is None:
        return None
    if spec.base_model in SPECS:
        continued = json.loads((base_model_folder(spec) / "zoo.json").read_text())
        return {"name": spec.base_model, "zoo_hash": continued["hash"], "base_model": continued.get("base_model")}
    from training.model_store import read_manifest

    source = read_manifest(base_model_folder(spec))
    return {"name": spec.base_model, "source": source.get("source"), "conversion_version": source.get("conversion_version")}


def _parameter_count(folder: Path) -> int:
    from safetensors.torch import load_file

    return sum(tensor.numel() for tensor in load_file(folder / "model.safetensors").values())


def build(spec: ZooSpec, *, out: str | None = None, control: BuildControl | None = None) -> Path:
    """Build (or finish, or just find) the spec's model; returns its final folder (copied to `out` when given)."""
    from transformers.utils import logging as transformers_logging

    transformers_logging.disable_progress_bar()  # one bar per saved shard would bury the stage lines
    control = control or BuildControl()
    folder = build_folder(spec)
    final = folder / "final"
    if not (final / "zoo.json").exists():
        from training.zoo.adapters import materialize

        materialize(spec, say=control.say)  # a kept adapter is the build, made in seconds
    if (final / "zoo.json").exists():
        control.say(f"{spec.name} is built: {final}")
    else:
        started = time.time()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "spec.json").write_text(json.dumps(canonical(spec), indent=2))
        if spec.base_model is not None:
            start_from = str(base_model_folder(spec))
            control.say(f"[{spec.name}] fine-tuning {spec.base_model} ({start_from})")
            walls = {"tokenizer": 0.0, "pretrain": 0.0}
        else:
            parent = parent_spec(spec)
            base = build_folder(parent) if parent is not None else folder
            if parent is not None:
                control.say(f"[{spec.name}] continuing from {parent.name}'s pretrained stage in {base}")
            tokenizer = _tokenizer_stage(parent or spec, base, control)
            pretrained = _pretrain_stage(parent or spec, base, control)
            start_from = pretrained["final"]
            walls = {"tokenizer": tokenizer["wall_s"], "pretrain": pretrained["wall_s"]}
        sft = _sft_stage(spec, folder, start_from, control)
        walls["sft"] = sft["wall_s"]
        final = _final_stage(spec, folder, sft["final"], start_from, walls, control)
        control.say(f"{spec.name} built in {time.time() - started:.0f}s: {final}")
    if out is not None:
        shutil.copytree(final, out, dirs_exist_ok=True)
        control.say(f"copied to {out}")
        return Path(out)
    return final
