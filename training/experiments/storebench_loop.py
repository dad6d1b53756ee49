"""The improvement loop on StoreBench (issue 27): the reference base evaluated on the evaluation scenarios, then GRPO on
the five training scenarios, then diagnose -> recovery-view SFT, each from the same base, evaluated again.

    python -m training.experiments storebench-loop --smoke          # tiny model, every arm, well under a minute
    python -m training.experiments storebench-loop --base base-small

Truncation, said plainly. A StoreBench episode is 30-365 business days of up to 40 operations each (an anchor that
passes makes 100-500 calls); a few-million-parameter base with a 4k context plays MAX_TURNS agent turns, so no
evaluation episode reaches its horizon and every composite is 0 (an unfinished run scores 0: scoring.py). The table
says so, and reports beside it what a truncated episode does move: `step reward` (the episodes run with
reward="daily", whose per-day rewards sum to the running composite through the last day the agent ended), days
ended, days ended without a stock-out, the share of the operation budget spent, the valid-call rate and the score's
components (service, satisfaction, inventory, cash safety and profit at the cut).

Arms, every one from the same base:
- grpo: training/recipes/grpo.py on "storebench/train" (the five training scenarios; seeds TRAIN_SEEDS), turn cap
  MAX_TURNS, trained on the sum of the per-day rewards (step_rewards with env_options reward="daily").
- recovery_sft: `recovery_views` (the arm's `prepare`) plays the base greedily on as many training-scenario prompts as
  GRPO samples (tasks_per_step x max_steps, seeds RECOVERY_SEEDS), diagnoses every failing episode with the rule
  diagnoser (environments.diagnosis.rules: the anchor's pivotal step and its first state-changing call there) over
  the FULL horizon (the turn cap is the harness's, not the world's), falls back to the first invalid or failing call
  when no pivot exists (a short prefix rarely loses what the anchor cannot make up), verifies each correction by
  replay (environments.diagnosis.branching.verify_correction: the corrected branch must beat the original-action
  retry, both continued by the anchor to the horizon; a tie, where the anchor recovers either way, is kept and
  flagged when KEEP_TIES), and writes the kept branches as recovery views (environments.diagnosis.exports.
  recovery_example, cut to the correction and RECOVERY_TURNS anchor turns after it); SFT trains from each view's
  train_from_step. The data's summary (<data>.json beside it) counts verified, tied and refuted corrections.
- none: the base itself.

Data hygiene: training touches only the registry's train split; evaluation plays the eval split (dev + test scenarios)
on seeds EVAL_SEEDS; `training_jobs` lists every (scenario, seed) training can reach, and the tests assert it meets no
evaluation job. `scenario_report` adds per-scenario tables (mean +- 95% CI over training seeds) and the anchors' rows:
each anchor on the same (scenario, seed) jobs cut at the same number of agent steps, and its full-horizon composite
from the calibration (held-out seeds 1000-1009, the README's held-out table).
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from environments.records import Record, record_passed, record_score
from training.experiments import QWEN3_1_7B, Arm, Evaluation, Experiment, GpuConfig, register

TRAIN_SET = "storebench/train"
EVAL_SET = "storebench/eval"
OPTIONS = {"reward": "daily"}
MAX_TURNS = 8  # agent turns per episode: training and evaluation (base-small: ~2.4k prompt tokens by the 8th turn)
MAX_NEW_TOKENS = 64  # one tool call; a purchase order with two lines is ~50 base-small tokens
TRAIN_SEEDS = (0, 1000)  # [start, stop) of GRPO's seeds, on the training scenarios only
RECOVERY_SEEDS = (2000, 3000)  # [start, stop) of the diagnosed episodes' seeds, on the training scenarios only
EVAL_SEEDS = (500_000, 500_022)  # test: 2 per evaluation scenario (the task set is cycled over the seeds)
DEV_SEEDS = (400_000, 400_011)  # dev: 1 per evaluation scenario (one grid point: never played)
ANCHOR = "smart-triage"  # StoreBench's default anchor: diagnoses, corrections and the continuations that verify them
RECOVERY_TURNS = 4  # anchor turns kept after the correction in a recovery view
# A correction whose branch ties the retry (both pass with the same composite: the anchor, continuing, recovers what
# the agent's short prefix did either way) is kept, flagged header.meta.recovery.verification="tie" and counted apart
# in the report; a refuted one (the correction does worse) never is. False: verified corrections only.
KEEP_TIES = True
REPORTED_ANCHORS = ("do-nothing", "random-valid", "naive-restock", "smart-triage")
RECOVERY_DATA = "recovery-views"  # the recovery arm's `data` until `recovery_views` makes the file


# --- what an evaluation episode moves --------------------------------------------------------------------------
def episode_figures(record: Record) -> dict[str, float]:
    """Evaluation.episode_measures: days ended, days ended without units lost to a stock-out, and the share of the
    operation budget of the days played (ended days, plus the open one) that the agent's calls spent."""
    from environments import registry
    from environments.storebench.tools import TOOLS

    header = record["header"]
    per_window = int(registry.get_task(f"{header['env']}/{header['task']}").spec["world"]["ops_per_window"])
    ended = clean = ops = 0
    for step in record["steps"]:
        if step.get("source") != "agent" or (step.get("meta") or {}).get("invalid_action"):
            continue  # an unparsed action never reached the store and spent nothing
        results = {r.get("call_id"): r for r in step.get("results") or []}
        for call in step.get("tool_calls") or []:
            result = results.get(call.get("id")) or {}
            refused = result.get("is_error") and any(
                text in json.dumps(result.get("content"), default=str) for text in ("window is spent", "episode is over")
            )
            if refused:
                continue
            entry = TOOLS.get(call.get("name"))
            ops += entry[0].op_cost if entry else 1  # an unknown tool costs what the environment charges it (1)
            if call.get("name") == "end_window" and not result.get("is_error"):
                ended += 1
                content = result.get("content") or {}
                clean += int(isinstance(content, dict) and not content.get("units_lost_to_stockouts"))
    finished = header.get("termination_reason") in ("horizon_reached", "bankrupt")
    days = max(1, ended + (0 if finished else 1))
    return {"days ended": float(ended), "days without stock-out": float(clean), "ops budget use": ops / (days * per_window)}


# --- recovery views ----------------------------------------------------------------------------------------------
def training_jobs(values: dict[str, Any]) -> list[tuple[str, int]]:
    """Every (scenario, seed) the arms can train on under `values`: GRPO's seed range and the diagnosed episodes'."""
    from training.onpolicy import task_ids

    start = int(values["train_seed_start"])
    return [(t, s) for t in task_ids(values["task"]) for s in range(start, start + int(values["train_seeds"]))] + recovery_jobs(values)


def recovery_jobs(values: dict[str, Any]) -> list[tuple[str, int]]:
    """The diagnosed episodes' jobs: as many as GRPO's prompts (tasks_per_step x max_steps), the training scenarios in turn."""
    from training.onpolicy import task_ids

    tasks = task_ids(TRAIN_SET)
    count = int(values["tasks_per_step"]) * int(values["max_steps"])
    assert count <= RECOVERY_SEEDS[1] - RECOVERY_SEEDS[0], f"{count} recovery episodes outgrow RECOVERY_SEEDS {RECOVERY_SEEDS}"
    return [(tasks[i % len(tasks)], RECOVERY_SEEDS[0] + i) for i in range(count)]


def full_horizon(record: Record) -> dict[str, Any]:
    """The record with the sampler's turn cap lifted: a diagnosis asks what the anchor can still do over the days the
    cap cut, and a takeover bound by the agent's cap could never pass."""
    harness = {**(record["header"].get("harness") or {}), "max_steps": None}
    return {**record, "header": {**record["header"], "harness": harness}}


def diagnose(record: Record, *, anchor: str = ANCHOR) -> tuple[dict[str, Any], str]:
    """(diagnosis, how) of a failing record: the rule diagnosis ("rule") when it finds a pivotal step, else the first
    invalid or failing agent call ("first-error", else the first agent step: "first-step") with the anchor's first
    state-changing call from there as the correction. Raises LookupError when the anchor changes nothing from there."""
    from environments.diagnosis.model_diagnoser import DiagnosisProposal
    from environments.diagnosis.rules import categorize, first_state_changing_call, rule_diagnose
    from environments.policies import make_policy

    def factory(env: Any, seed: int) -> Any:
        return make_policy(anchor, env, seed)

    answer = rule_diagnose(record, anchor_factory=factory)
    if answer.proposal is not None:
        return answer.proposal.as_json(), "rule"
    agents = [s for s in record["steps"] if s.get("source") == "agent"]
    failing = [s for s in agents if (s.get("meta") or {}).get("invalid_action") or any(r.get("is_error") for r in s.get("results") or [])]
    step, how = (failing[0], "first-error") if failing else (agents[0], "first-step")
    k = int(step["index"])
    correction = first_state_changing_call(record, k, anchor_factory=factory, seed=0)
    if correction is None:
        raise LookupError(f"{anchor} changes nothing from step {k}")
    proposal = DiagnosisProposal(
        step_index=k,
        category=categorize(record, k, correction),
        evidence_steps=[k],
        correction=correction,
        explanation=f"{answer.error}; the first {'invalid or failing call' if failing else 'agent step'} is step {k}, where "
        f"{anchor} would call {correction['name']}({json.dumps(correction['arguments'], default=str)}).",
    )
    return proposal.as_json(), how


def recovery_view(record: Record, *, anchor: str = ANCHOR) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """(the recovery view or None, what happened) for one failing sampled record (module docstring)."""
    from environments.diagnosis.branching import verify_correction
    from environments.diagnosis.exports import recovery_example
    from environments.policies import make_policy

    whole = full_horizon(record)
    try:
        diagnosis, how = diagnose(whole, anchor=anchor)
    except LookupError as exc:
        return None, {"diagnosed": False, "why": str(exc)}
    outcome = verify_correction(
        whole,
        step_index=diagnosis["step_index"],
        correction=diagnosis["correction"],
        continuation_seed=0,
        policy_factory=lambda env, seed: make_policy(anchor, env, seed),
    )
    tie = outcome.corrected.passed and outcome.retry.passed and abs(outcome.corrected.composite - outcome.retry.composite) < 1e-9
    kept = "verified" if outcome.verified else ("tie" if tie and KEEP_TIES else "")
    summary = {"diagnosed": True, "how": how, "category": diagnosis["category"], "kept": kept, **outcome.as_json()}
    if not kept:
        return None, summary
    view = recovery_example(outcome.corrected.record, diagnosis, retry=outcome.retry.record)
    view["header"]["meta"]["recovery"]["verification"] = kept
    k = int(diagnosis["step_index"])
    kept, turns = [], 0
    for step in view["steps"]:
        if step["index"] > k and step.get("source") == "agent":
            turns += 1
            if turns > RECOVERY_TURNS:
                break
        kept.append(step)
    return {**view, "steps": kept}, summary


def recovery_views(experiment: Experiment, values: dict[str, Any]) -> dict[str, Any]:
    """Experiment.prepare: for the recovery arm (data == RECOVERY_DATA) the recovery views of the base's failing
    training-scenario episodes, written once under var/experiments/data/ -> {"data": path}; {} for other arms."""
    if values.get("data") != RECOVERY_DATA:
        return {}
    from training.zoo.build import var_root

    jobs = recovery_jobs(values)
    turns, new_tokens = int(values.get("max_turns", MAX_TURNS)), int(values.get("max_new_tokens", MAX_NEW_TOKENS))
    key = json.dumps([str(values["model"]), jobs, turns, new_tokens, ANCHOR, RECOVERY_TURNS, sorted(OPTIONS.items())])
    name = f"storebench-recovery-{hashlib.sha256(key.encode()).hexdigest()[:12]}"
    path = var_root() / "experiments" / "data" / f"{name}.jsonl"
    if not path.exists():
        views, summaries = _make_views(values, jobs, turns, new_tokens)
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / f"{name}.json").write_text(json.dumps({"jobs": jobs, "episodes": summaries}, indent=1))
        if not views:
            raise ValueError(f"no verified recovery view among {len(jobs)} base episodes; see {path.parent / (name + '.json')}")
        partial = path.with_suffix(".tmp")
        partial.write_text("".join(json.dumps(v, sort_keys=True) + "\n" for v in views))
        partial.rename(path)  # a file under this name is always complete
    return {"data": str(path)}


def _make_views(values: dict[str, Any], jobs: list[tuple[str, int]], turns: int, new_tokens: int) -> tuple[list[Any], list[Any]]:
    import torch

    from training.experiments.runner import prompt_style_of
    from training.modeling import load_model
    from training.sampling import rollout_episodes

    model, tokenizer = load_model(str(values["model"]), trainable=False)
    with torch.no_grad():
        records = rollout_episodes(
            model,
            tokenizer,
            jobs,
            max_turns=turns,
            max_new_tokens=new_tokens,
            temperature=0.0,
            env_options=OPTIONS,
            style=prompt_style_of(str(values["model"]), values),
            max_prompt_tokens=int(values.get("max_prompt_tokens", 4096)),
        )
    views, summaries = [], []
    for (task, seed), record in zip(jobs, records, strict=True):
        if record_passed(record):
            summaries.append({"task": task, "seed": seed, "passed": True})
            continue
        view, summary = recovery_view(record)
        summaries.append({"task": task, "seed": seed, **summary})
        if view is not None:
            views.append(view)
    return views, summaries


# --- the per-scenario report ---------------------------------------------------------------------------------------
def anchor_rows(jobs: list[tuple[str, int]], turns: int, anchors: tuple[str, ...] = REPORTED_ANCHORS) -> dict[str, list[dict[str, Any]]]:
    """Each anchor on each job cut at `turns` agent steps with reward="daily" (its step reward is comparable with the
    models'): {anchor: [{task, seed, cut_step_reward, cut_composite, days ended, ...}]}."""
    from environments import registry
    from environments.policies import make_policy
    from environments.runner import run_episode

    out: dict[str, list[dict[str, Any]]] = {}
    for anchor in anchors:
        rows = []
        for task, seed in jobs:
            env = registry.make(task, seed, options=OPTIONS)
            cut = run_episode(env, make_policy(anchor, env, 0), max_steps=turns)  # agent steps, as the models' turn cap
            rows.append(
                {
                    "task": task,
                    "seed": seed,
                    "cut_step_reward": sum(float(s.get("reward") or 0.0) for s in cut["steps"]),
                    "cut_composite": float(record_score(cut)["composite"]),
                    **episode_figures(cut),
                }
            )
        out[anchor] = rows
    return out


def full_horizon_composite(task: str, anchor: str) -> tuple[float, int]:
    """(mean composite, episodes) of `anchor` over the full horizon on the calibration's held-out seeds (1000-1009;
    environments/storebench/calibration.json, measured on this engine): the full horizon is not replayed per report."""
    from environments.storebench.env import StoreBenchEnv
    from environments.storebench.scoring import load_calibration

    entry = load_calibration(StoreBenchEnv.version).get(task.split("/", 1)[1]) or {}
    values = ((entry.get("heldout") or {}).get("composites") or {}).get(anchor) or []
    return (sum(values) / len(values) if values else float("nan")), len(values)


def _cell(values: dict[int, list[float]]) -> str:
    from training.experiments.standard import summarise

    summary = summarise(values)
    return f"{summary.mean:.3f} ± {summary.ci:.3f}"


def scenario_report(experiment: Experiment, result: Any) -> str:
    """Experiment.report: per evaluation scenario, each arm's composite and step reward (mean ± 95% CI over training
    seeds), then the anchors on the same jobs, cut and full; anchors are cached in the run folder."""
    ev = experiment.evaluation
    turns, new_tokens = ev.max_turns, ev.max_new_tokens
    if result.smoke:  # the runner plays a smoke within the smoke's own (smaller) limits
        turns, new_tokens = min(turns, int(result.shared["max_turns"])), min(new_tokens, int(result.shared["max_new_tokens"]))
    arm_rows: dict[str, dict[str, dict[str, dict[int, list[float]]]]] = {}
    jobs: list[tuple[str, int]] = []
    for name, arm in result.arms.items():
        for run in arm.runs:
            episodes = run["evaluations"].get("test", {}).get("episodes", [])
            if [e["seed"] for e in episodes] != list(result.test_seeds):
                continue  # a dev-only tuning run
            jobs = [(e["task"], e["seed"]) for e in episodes]
            for e in episodes:
                cells = arm_rows.setdefault(e["task"], {}).setdefault(name, {})
                for measure, value in (
                    ("composite", e["reward"]),
                    ("step reward", e.get("step_reward", 0.0)),
                    ("days ended", e.get("extra", {}).get("days ended", 0.0)),
                ):
                    cells.setdefault(measure, {}).setdefault(run["seed"], []).append(float(value))
    cache = Path(result.out) / f"anchors-{hashlib.sha256(json.dumps([jobs, turns]).encode()).hexdigest()[:10]}.json"
    anchors = json.loads(cache.read_text()) if cache.exists() else anchor_rows(jobs, turns)
    if not cache.exists():
        cache.parent.mkdir(parents=True, exist_ok=True)
        cache.write_text(json.dumps(anchors, indent=1))
    lines = [
        f"Per scenario (test seeds; every episode cut at {turns} agent turns, max {new_tokens} new tokens each; "
        "composite = the terminal score, 0 for a run the cut leaves unfinished; step reward = the per-day rewards summed, "
        "i.e. the running composite through the last day ended; days = days ended). Anchors: step reward on the same jobs "
        "cut at the same number of steps / mean composite over the full horizon on the calibration's held-out seeds "
        "1000-1009 (environments/storebench/calibration.json).",
        "",
        "| scenario | "
        + " | ".join(f"{a} composite | {a} step reward | {a} days" for a in result.arms)
        + " | "
        + " | ".join(f"{a} cut / full" for a in anchors)
        + " |",
        "| --- |" + " --- | --- | --- |" * len(result.arms) + " --- |" * len(anchors),
    ]
    for task in sorted(arm_rows):
        cells = []
        for name in result.arms:
            per = arm_rows[task].get(name, {})
            cells += [_cell(per[m]) if m in per else "-" for m in ("composite", "step reward", "days ended")]
        for anchor, rows in anchors.items():
            mine = [r for r in rows if r["task"] == task]
            cut = sum(r["cut_step_reward"] for r in mine) / max(1, len(mine))
            cells.append(f"{cut:.3f} / {full_horizon_composite(task, anchor)[0]:.3f}")
        lines.append(f"| {task.split('/', 1)[1]} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


SHARED: dict[str, Any] = {
    # read by both recipes (grpo and sft); each recipe's own fields are the arms' overrides or dropped for the other
    "max_steps": 10,  # sized to ~50 CPU-minutes for the three seeds (README "Post-training reproduction": Cost)
    "learning_rate": 2e-5,
    "lr_schedule": "constant",
    "compact_tools": True,  # a base without a zoo prompt style (the smoke's tiny model); base-small's own style wins
    "max_result_chars": 400,
    # GRPO (and the recovery data: as many episodes as GRPO's prompts, cut at the same turns)
    "task": TRAIN_SET,
    "env_options": dict(OPTIONS),
    "step_rewards": True,
    "tasks_per_step": 2,
    "group_size": 4,
    "temperature": 1.0,
    "max_turns": MAX_TURNS,
    "max_new_tokens": MAX_NEW_TOKENS,
    "max_prompt_tokens": 4096,
    "train_seed_start": TRAIN_SEEDS[0],
    "train_seeds": TRAIN_SEEDS[1] - TRAIN_SEEDS[0],
    "eval_seed_start": 100_000,  # the recipe's own monitoring episode (training scenarios; the runner's evaluation is the table's)
    "eval_episodes": 1,
    # SFT on the recovery views
    "batch_size": 4,
    "max_tokens": 4096,
}

EXPERIMENT = register(
    Experiment(
        name="storebench-loop",
        question="Does GRPO on the five training scenarios (truncated horizons, per-day reward), or diagnose -> recovery-view "
        "SFT, move the reference base on StoreBench's evaluation scenarios, and what moves when the composite sits on the floor?",
        method="grpo",
        arms=(
            Arm("grpo", "grpo", {}, "GRPO on storebench/train, reward = the per-day rewards summed over the cut episode"),
            Arm("recovery_sft", "sft", {"data": RECOVERY_DATA}, "SFT on verified recovery views of the base's failing training episodes"),
            Arm("none", "none", {}, "no training: the base"),
        ),
        shared=SHARED,
        evaluation=Evaluation(
            task=EVAL_SET,
            dev_seeds=DEV_SEEDS,
            test_seeds=EVAL_SEEDS,
            max_turns=MAX_TURNS,
            max_new_tokens=MAX_NEW_TOKENS,
            components=True,
            options=dict(OPTIONS),
            episode_measures="training.experiments.storebench_loop:episode_figures",
        ),
        train_seeds=(0, 1, 2),
        smoke={
            "max_steps": 1,
            "tasks_per_step": 1,
            "group_size": 2,
            "max_turns": 2,
            "max_new_tokens": 16,
            "batch_size": 1,
            "max_tokens": 2048,
            "eval_episodes": 2,
        },
        needs_teacher=False,
        prepare="training.experiments.storebench_loop:recovery_views",
        report="training.experiments.storebench_loop:scenario_report",
        readme="environments/storebench/README.md",
        gpu=GpuConfig(
            architecture=QWEN3_1_7B,
            # a 1.7B model reads a 32k-token StoreBench day; bf16 full fine-tuning with gradient checkpointing
            overrides={
                "max_turns": 64,
                "max_new_tokens": 256,
                "max_prompt_tokens": 32_768,
                "max_tokens": 32_768,
                "tasks_per_step": 5,
                "group_size": 8,
                "grad_accum": 8,
                "gradient_checkpointing": True,
            },
            steps=3,
        ),
    )
)
