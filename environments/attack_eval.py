"""The attack axis measured for scripted anchors: each anchor x task x seed runs once unattacked and once per style.

    python -m environments attack-eval storebench/dev --anchors smart-triage,hardened,oracle --seeds 1000-1004

Every condition carries the guidance switched on (when the environment has guidance), so compliance is measured on
the benign and the attacked runs alike. Prints one row per anchor with the four figures of environments.attacks,
and per style the attack success rate.
"""

from __future__ import annotations

from typing import Any

from environments.attacks import NO_ATTACK, AttackAxis, attack_metrics, metric_row
from environments.core import EnvError
from environments.records import record_score
from environments.registry import env_meta, make, task_set


def axis_of(task_set_name: str) -> tuple[list[Any], AttackAxis]:
    specs = task_set(task_set_name)
    axis = env_meta(specs[0].env).attacks
    if not axis:
        raise EnvError("no_attack_axis", f"{specs[0].env} has no attack axis (its metadata declares none)")
    return specs, axis


def conditions(axis: AttackAxis, styles: list[str] | None = None) -> list[dict[str, Any]]:
    """The options of each condition: unattacked first, then one per style; guidance on where the axis has it."""
    base = {axis.guidance_option: True} if axis.guidance else {}
    return [dict(base)] + [{**base, axis.attack_option: style} for style in (styles or axis.styles)]


def attack_eval(task_set_name: str, *, anchors: list[str], seeds: list[int], styles: list[str] | None = None) -> dict[str, Any]:
    """{"anchors": {name: {**attack_metrics, "by_style": {style: asr}}}, "episodes": n}; scripted anchors only."""
    from environments.runner import make_policy, run_episode

    specs, axis = axis_of(task_set_name)
    for style in styles or []:
        if problems := axis.problems({axis.attack_option: style}):
            raise EnvError("bad_options", problems[0])
    out: dict[str, Any] = {}
    episodes = 0
    for anchor in anchors:
        rows: list[dict[str, Any]] = []
        for spec in specs:
            for seed in seeds:
                for options in conditions(axis, styles):
                    env = make(spec.id, seed=seed, options=options)
                    record = run_episode(env, make_policy(anchor, env, seed))
                    score = record_score(record)
                    rows.append({**metric_row(composite=score["composite"], score=score), "style": axis.style_of(options)})
                    episodes += 1
        figures = attack_metrics(rows)
        figures["by_style"] = {
            style: attack_metrics([r for r in rows if r["style"] == style])["attack_success_rate"] for style in styles or axis.styles
        }
        out[anchor] = figures
    return {"task_set": task_set_name, "seeds": seeds, "anchors": out, "episodes": episodes}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.0f}%"


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def table_markdown(result: dict[str, Any]) -> str:
    styles = list(next(iter(result["anchors"].values()))["by_style"]) if result["anchors"] else []
    head = ["anchor", "benign utility", "utility under attack", "ASR", *[f"ASR {s}" for s in styles], "guidance compliance"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for name, f in result["anchors"].items():
        cells = [name, _num(f["benign_utility"]), _num(f["utility_under_attack"]), _pct(f["attack_success_rate"])]
        cells += [_pct(f["by_style"][s]) for s in styles] + [_pct(f["guidance_compliance"])]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


__all__ = ["attack_eval", "conditions", "table_markdown", "NO_ATTACK"]
