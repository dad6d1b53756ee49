"""Canonical records from scripted policies (SFT demonstrations), shaped like the local sampler's records.

    records = scripted_episodes(ExpertPolicy(), "toolgym/lookup", seeds=range(200))

The header carries the same system prompt and tool schemas the sampler gives the model, so an SFT model sees
the prompts it will be sampled with. (environments.runner, when present, writes the same record shape.)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from environments.core import Policy
from environments.records import Header, Record, ToolCallDict, ToolResultDict, record_score
from environments.registry import make
from environments.trajectory import make_step, new_record
from training.sampling import system_prompt_for


def scripted_episode(policy: Policy, task_id: str, seed: int, *, max_turns: int = 8) -> Record:
    env = make(task_id, seed)
    observation = env.reset()
    tools = env.tools()
    system = system_prompt_for(env)
    header: Header = {
        **env.header(),
        "source": "rollout",
        "policy": policy.describe(),
        "tools": [t.openai_schema() for t in tools],
        "harness": {"system_prompt": system},
    }
    record = new_record(header=header, steps=[make_step(index=0, source="env", message=observation.text)])
    turns = 0
    while not env.done and turns < max_turns:
        action = policy.act(record["steps"], tools)
        results: list[ToolResultDict] = []
        events: list[dict[str, Any]] = []
        reward = 0.0
        for call in action.tool_calls:
            outcome = env.step(call)
            results.append({"call_id": call.id, "content": outcome.content, "is_error": outcome.is_error})
            events.extend(e.as_json() for e in outcome.events)
            reward += outcome.reward
        calls: list[ToolCallDict] = [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in action.tool_calls]
        step = make_step(
            index=len(record["steps"]), source="agent", message=action.message or "", tool_calls=calls, results=results, events=events
        )
        step["reward"] = reward
        record["steps"].append(step)
        turns += 1
    score = env.score()
    record["header"].update(
        {
            "termination_reason": score.termination_reason or "max_steps",
            "score": {"composite": score.composite, "passed": score.passed, "components": score.components},
        }
    )
    return record


def scripted_episodes(policy: Policy, task_id: str, seeds: Iterable[int], *, max_turns: int = 8) -> list[Record]:
    return [scripted_episode(policy, task_id, seed, max_turns=max_turns) for seed in seeds]


def anchor_episode(anchor: str, task_id: str, seed: int, *, options: dict[str, Any] | None = None) -> Record:
    """An environment anchor's episode through environments.runner, so the environment's user (a service-desk
    caller) speaks its turns; the header carries the sampler's system prompt, as scripted_episode's does."""
    from environments.runner import make_policy, run_episode

    env = make(task_id, seed, options=options)
    return run_episode(env, make_policy(anchor, env, seed), harness={"system_prompt": system_prompt_for(env)})


def demonstrations_file(task_id: str, seeds: range, *, max_turns: int) -> str:
    """The task's scripted demonstrator (training.zoo.corpus.demo_policy) on `seeds`, its passed episodes written once
    as JSONL under var/experiments/data/ (deterministic, so the file's name is its content); returns the path."""
    import json
    from pathlib import Path

    from training.zoo.build import var_root
    from training.zoo.corpus import demo_policy

    name = f"{task_id.replace('/', '-')}-demos-{seeds.start}-{seeds.stop}-turns{max_turns}.jsonl"
    path = var_root() / "experiments" / "data" / name
    if not path.exists():
        records = [scripted_episode(demo_policy(task_id, s), task_id, s, max_turns=max_turns) for s in seeds]
        passed = [r for r in records if record_score(r)["passed"]]
        assert passed, f"the {task_id} demonstrator passed none of seeds {seeds.start}-{seeds.stop - 1}"
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = Path(f"{path}.tmp")
        partial.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in passed))
        partial.rename(path)  # a file under this name is always complete
    return str(path)
