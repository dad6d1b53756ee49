"""Caddie: does a critic trained on whether the frozen actor then succeeds help that actor, and another one?

    python -m training.experiments caddie --smoke
    python -m training.experiments caddie --base base-small --teacher teacher-small   # the teacher is the second actor

The actor is the base, frozen; the critic starts as a copy of the base. Two arms: `caddie` trains the critic with
training/recipes/caddie.py (group-relative RL on the actor's outcome after its advice) and `untrained` is the base
itself as critic (recipe "none"). The runner's own columns (test reward, pass rate) play each checkpoint ALONE as
the actor: for `untrained` that is the actor without a critic, for `caddie` it is the trained critic's weights
acting, a check of what RL on advice did to the model as an actor, not the method's figure. The method's figures
are the measures (`caddie_measures`), on the same test seeds, greedy actor and greedy critic:

- actor_no_critic_pass / actor_with_critic_pass: the base actor alone, and advised by this checkpoint as critic
  after every actor turn; actor_critic_gain: the mean per-seed reward difference (with − without);
- second_*: the same with the teacher as the actor (`--teacher`; the smoke's differently seeded tiny model), an
  actor the critic never trained with;
- critic_turns: the critic's turns per episode with the base actor.

"Without critic" is the same number in both arms (the actor does not change); "untrained critic" is the
`untrained` arm's with-critic figure, "trained critic" the `caddie` arm's. Measures are cached in each run's
result.json: a different `--teacher` needs a fresh --out folder. No GpuConfig yet: benchmarks/gpu_experiments.py
runs every arm through run_recipe (a `none` arm has no recipe) and gives every config a `teacher` field.
"""

from __future__ import annotations

import dataclasses
from functools import lru_cache
from typing import Any

from environments.records import record_score
from training.experiments import Arm, Evaluation, Experiment, register

TASK = "toolgym/chain"


@lru_cache(maxsize=8)
def _alone(actor_path: str, jobs: tuple[tuple[str, int], ...], limits: tuple[int, int, int], style: Any) -> tuple[tuple[float, bool], ...]:
    """(reward, passed) per job of the actor playing greedily without a critic, within (max turns, max new tokens, max
    prompt tokens): the same for every arm and training seed, so played once per process."""
    import torch

    from training.modeling import load_model
    from training.sampling import rollout_episodes

    actor, tokenizer = load_model(actor_path, trainable=False)
    with torch.no_grad():
        records = rollout_episodes(
            actor,
            tokenizer,
            list(jobs),
            max_turns=limits[0],
            max_new_tokens=limits[1],
            temperature=0.0,
            style=style,
            max_prompt_tokens=limits[2],
        )
    return tuple((float(record_score(r)["composite"]), bool(record_score(r)["passed"])) for r in records)


def caddie_measures(checkpoint: str, base: str, values: dict[str, Any], seeds: list[int]) -> dict[str, float]:
    """Experiment.measures: each actor (the base, then the teacher) alone and advised by `checkpoint` (module docstring)."""
    import torch

    from training import make_config
    from training.experiments.runner import evaluation_jobs, load_checkpoint, prompt_style_of
    from training.modeling import check_same_vocabulary, load_model
    from training.recipes.caddie import CaddieConfig, play

    style = prompt_style_of(base, values)
    known = {f.name for f in dataclasses.fields(CaddieConfig)}
    ev = EXPERIMENT.evaluation
    limits = {
        "max_turns": min(ev.max_turns, values.get("max_turns", ev.max_turns)),  # a smoke's limits are smaller
        "max_new_tokens": min(ev.max_new_tokens, values.get("max_new_tokens", ev.max_new_tokens)),
    }
    shown = {"compact_tools": style.compact_tools, "max_result_chars": style.max_result_chars}
    config = make_config("caddie", {**{k: v for k, v in values.items() if k in known}, "model": base, **shown, **limits})
    assert isinstance(config, CaddieConfig)
    critic, tokenizer = load_checkpoint(checkpoint, base)
    jobs = evaluation_jobs(ev.task, seeds)
    out: dict[str, float] = {}
    for name, path in (("actor", config.actor or base), ("second", values.get("teacher"))):
        if not path:
            continue  # no teacher given: only the actor the critic trained with
        actor, actor_tokenizer = load_model(str(path), trainable=False)
        check_same_vocabulary(tokenizer, actor_tokenizer)
        alone = _alone(str(path), tuple(jobs), (config.max_turns, config.max_new_tokens, config.max_prompt_tokens), config.prompt_style)
        with torch.no_grad():
            advised = play(actor, tokenizer, jobs, config, critic=config.critic_turns(critic, temperature=0.0), temperature=0.0)
        n = len(jobs)
        out[f"{name}_no_critic_pass"] = sum(p for _, p in alone) / n
        out[f"{name}_with_critic_pass"] = sum(bool(record_score(r)["passed"]) for r in advised) / n
        out[f"{name}_critic_gain"] = sum(float(record_score(r)["composite"]) - a for r, (a, _) in zip(advised, alone, strict=True)) / n
        if name == "actor":
            out["critic_turns"] = sum(1 for r in advised for s in r["steps"] if s.get("role") == "critic") / n
    return out


EXPERIMENT = register(
    Experiment(
        name="caddie",
        question="Does a critic trained by group-relative RL on whether the frozen actor then succeeds (Caddie) raise that "
        "actor's success over no critic and over the untrained critic, and does the gain carry to an actor it never trained with?",
        method="caddie",
        arms=(
            Arm("caddie", "caddie", {}, "the critic (a copy of the base) trained on the frozen base actor's outcome after its advice"),
            Arm("untrained", "none", {}, "the base itself, untrained, as the critic"),
        ),
        shared={
            "task": TASK,
            "max_steps": 8,  # sized to this session's CPU (2 shared cores)
            "tasks_per_step": 4,
            "group_size": 4,
            "temperature": 1.0,  # the critic's samples: the group's variation
            "actor_temperature": 0.0,  # a greedy actor: a group differs by its advice alone
            "critic_every": 1,
            "critic_max_new_tokens": 32,
            "max_turns": 4,
            "max_new_tokens": 48,
            "train_seed_start": 0,
            "train_seeds": 1000,
        },
        evaluation=Evaluation(task=TASK, dev_seeds=(50_000, 50_032), test_seeds=(100_000, 100_064), max_turns=4, max_new_tokens=48),
        tuning={"learning_rate": (1e-4,)},  # one point, the same for every arm (the `none` arm ignores it)
        measures="training.experiments.caddie:caddie_measures",
        train_seeds=(0, 1, 2),
        smoke={
            "max_steps": 2,
            "tasks_per_step": 1,
            "group_size": 2,
            "max_turns": 2,
            "max_new_tokens": 16,
            "critic_max_new_tokens": 8,
            "eval_episodes": 2,
        },
        needs_teacher=True,  # the second actor
    )
)
