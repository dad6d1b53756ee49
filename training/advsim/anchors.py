"""Scripted anchors through AdvSim2Real's own evaluation: the scale a table's agent rows are read against.

    python -m training.advsim.anchors storebench-short/train storebench-short/eval --anchors smart-triage,hardened \
        --seeds 200000-200003 --styles direct,quoted
    python -m training.advsim.anchors servicedesk/train servicedesk/eval --anchors oracle --real-user-model PATH
    python -m training.advsim.anchors storebench-short/train storebench-short/eval --model base-small --max-turns 60

Each anchor plays the held-out seeds in both worlds, clean and under (b) the unseen styles and (c) an adversary
trained for `--adversary-rounds` rounds against it (the co-trained adversary (a) needs a training run, so it has no
row here), through the same `evaluate_checkpoint` as a trained checkpoint: the printed measures have the names of the
experiment's table (`real_completion_unseen`, `gap_asr_fresh`, ...). A scripted anchor plays to `--max-turns`, its
own budget, not the agent's turn cap: the rows say what an agent that finishes its task scores under the same
attacks, not what a model at the CPU cap could reach. `--model` adds a row for a checkpoint (a zoo name or folder),
played greedily by the experiment's ModelPlayer under the same budget, with how its episodes ended.
"""

from __future__ import annotations

import argparse
import collections
import dataclasses
import sys
from typing import Any

from environments.core import EnvError
from environments.seeds import SeedError, seeds_parse
from training.advsim.adapters import world_problem
from training.advsim.worlds import ModelPlayer, ScriptedPlayer
from training.config import ConfigError

MEASURES = ("completion_clean", "completion_unseen", "completion_fresh", "asr_unseen", "asr_fresh", "benign_utility")


def anchor_figures(
    anchor: str,
    *,
    task: str,
    eval_task_set: str,
    seeds: list[int],
    styles: list[str] | None = None,
    adversary_rounds: int = 1,
    max_turns: int = 60,
    real_user_model: str = "",
    model: str = "",
) -> dict[str, Any]:
    """The anchor's measures in both worlds (sim_*, real_*, gap_*), as experiment_measures gives a checkpoint's; with
    `model` (a from_pretrained folder) that checkpoint plays instead of the scripted `anchor`. `endings` counts how the
    evaluation's episodes ended (termination reasons)."""
    from environments.runner import make_policy
    from training.recipes.advsim import AdvSimConfig, evaluate_checkpoint, evaluation_adversaries, new_roles, worlds_for

    # Without `model` nothing here samples a model, except the service desk's real caller (real_user_model).
    config = AdvSimConfig(
        model=model or "scripted-anchor",
        task=task,
        eval_task_set=eval_task_set,
        unseen_styles=list(styles or []),
        real_user_model=real_user_model,
        final_adversary_rounds=adversary_rounds,
        max_turns=max_turns,
    )
    player: Any = ScriptedPlayer(lambda env, seed: make_policy(anchor, env, seed), max_turns=max_turns)
    if model:
        from training.experiments.runner import load_checkpoint, prompt_style_of

        style = prompt_style_of(model, {"compact_tools": True, "max_result_chars": 400})  # the experiments' StoreBench style
        config = dataclasses.replace(config, compact_tools=style.compact_tools, max_result_chars=style.max_result_chars)
        checkpoint, tokenizer = load_checkpoint(model, model)
        player = ModelPlayer(checkpoint, tokenizer, config)
    worlds = worlds_for(config, "cpu")
    adversaries, _ = evaluation_adversaries(player, config, worlds[0], new_roles(config)[1])  # (c) only: no co-trained one
    figures, records = evaluate_checkpoint(player, config, worlds, adversaries, seeds=seeds)
    return {**figures, "endings": dict(collections.Counter(r["header"]["termination_reason"] for r in records))}


def table_markdown(rows: dict[str, dict[str, float]]) -> str:
    columns = [f"{world}_{m}" for m in MEASURES for world in ("sim", "real")] + ["gap_completion_unseen", "gap_asr_fresh"]
    lines = ["| anchor | " + " | ".join(columns) + " |", "| --- | " + " | ".join("---:" for _ in columns) + " |"]
    for anchor, figures in rows.items():
        lines.append(f"| {anchor} | " + " | ".join("-" if figures.get(c) is None else f"{figures[c]:.3f}" for c in columns) + " |")
    lines += ["", "How the episodes ended: " + "; ".join(f"{name} {figures['endings']}" for name, figures in rows.items())]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.advsim.anchors", description=__doc__.split("\n\n")[0])
    parser.add_argument("task", help="the task set the fresh adversary's curriculum draws from, e.g. storebench-short/train")
    parser.add_argument("eval_task_set", help="the held-out task set the measures play, e.g. storebench-short/eval")
    parser.add_argument("--anchors", default="smart-triage,hardened", help="comma-separated scripted policies")
    parser.add_argument("--seeds", default="200000-200003", help="held-out seeds, e.g. 200000-200003")
    parser.add_argument("--styles", default="", help="the unseen attack styles, comma-separated (default: every style of the axis)")
    parser.add_argument("--adversary-rounds", type=int, default=1, help="rounds of the adversary trained against each anchor (0: none)")
    parser.add_argument("--max-turns", type=int, default=60, help="the anchor's turn budget per episode")
    parser.add_argument("--real-user-model", default="", help="from_pretrained folder of the service desk's real-world caller")
    parser.add_argument("--model", default="", help="also play this checkpoint (a zoo name or from_pretrained folder), greedy")
    args = parser.parse_args(argv)
    try:
        seeds = seeds_parse(args.seeds, maximum=100)
    except SeedError as exc:
        print(f"error: --seeds: {exc}", file=sys.stderr)
        return 2
    if problem := world_problem(args.task) or world_problem(args.eval_task_set):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    players = [(a, "") for a in args.anchors.split(",") if a]
    try:
        if args.model:
            from training.zoo import resolve

            players.append((args.model, str(resolve(args.model))))
        rows = {}
        for name, model in players:
            rows[name] = anchor_figures(
                name,
                task=args.task,
                eval_task_set=args.eval_task_set,
                seeds=seeds,
                model=model,
                styles=[s for s in args.styles.split(",") if s],
                adversary_rounds=args.adversary_rounds,
                max_turns=args.max_turns,
                real_user_model=args.real_user_model,
            )
    except EnvError as exc:  # an anchor the environment does not have, an attack style its axis lacks
        print(f"error: {exc.message}", file=sys.stderr)
        return 2
    except (ConfigError, ValueError, KeyError, AssertionError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # --model, or the service desk's real caller, could not be loaded
        print(f"error: a model could not be loaded ({str(exc)[:200]}); check --model / --real-user-model", file=sys.stderr)
        return 2
    print(
        f"{args.eval_task_set}, seeds {seeds[0]}-{seeds[-1]}, anchors at {args.max_turns} turns; "
        + "sim = simulator, real = real world, gap = sim - real"
    )
    print(table_markdown(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
