"""tau-bench results: a JSON list of `{task_id, reward, trial, info, traj}` (traj: OpenAI chat messages).

The results file name carries the run configuration
(`{agent}-{model}-{temp}_range_{start}-{end}_user-{user_model}-{user_strategy}_{time}.json`); when it
matches, the agent strategy and model go into the header's policy and the user simulator into harness.
"""

from __future__ import annotations

import re
from typing import Any

from environments.records import Record
from environments.trajectory import new_record
from lab.ingest.chat import StepList, add_openai_messages
from lab.ingest.common import finite_number, score_from_reward, set_termination, upload_header
from lab.ingest.reader import Reader, RecordContext, drop_none

NAME = "taubench"
ENV = "tau-bench"
TOOL_ERROR_PREFIX = "Error:"  # tau-bench tools answer failures with plain text starting so
FILENAME = re.compile(
    r"^(?P<agent>tool-calling|few-shot|react|act)-(?P<model>.+)-(?P<temperature>\d+(?:\.\d+)?)_range_(?P<start>-?\d+)-(?P<end>-?\d+)"
    r"_user-(?P<user_model>.+)-(?P<user_strategy>[a-z]+)_(?P<time>[^/]+?)\.json$"
)


def matches(value: Any) -> bool:
    return isinstance(value, dict) and "traj" in value and "task_id" in value


def run_config(filename: str) -> dict[str, str]:
    found = FILENAME.match(filename.rsplit("/", 1)[-1])
    return found.groupdict() if found else {}


def to_record(raw: Any, origin: str, ctx: RecordContext, context: dict[str, Any]) -> Record:
    record = Reader(raw, origin, ctx)
    task_id = record.get("task_id", "integer|string", required=True)
    reward = record.get("reward", "number", required=True)
    steps = StepList(ctx)
    add_openai_messages(record.array("traj", required=True), record.at("traj"), ctx, steps, error_prefix=TOOL_ERROR_PREFIX)
    meta: dict[str, Any] = {"trial": record.get("trial", "integer")}
    components: dict[str, float] = {}
    termination = None
    info = record.child("info")
    if info is not None:
        task = info.child("task")
        if task is not None:
            meta.update(instruction=task.get("instruction", "string"), user_id=task.get("user_id", "string"))
            meta.update(expected_actions=task.get("actions", "array"), expected_outputs=task.get("outputs", "array"))
            task.done()
        reward_info = info.get("reward_info", "object")
        if reward_info:
            meta["reward_info"] = reward_info
            details = reward_info.get("info") if isinstance(reward_info.get("info"), dict) else {}
            for key in ("r_actions", "r_outputs"):
                value = finite_number(details.get(key))  # booleans count as no number: r_actions is a float
                if isinstance(details.get(key), bool):
                    value = float(details[key])
                if value is not None:
                    components[key.removeprefix("r_")] = value
        meta.update(user_cost=info.get("user_cost", "number"), source=info.get("source", "string"))
        error = info.get("error", "string")
        if error:  # the harness caught an exception and recorded reward 0 with an empty trajectory
            meta.update(error=error, traceback=info.get("traceback", "string"))
            termination = "unexpected_error"
        info.done()
    config = run_config(context.get("file", ""))
    header = upload_header(
        fmt=NAME,
        env=ENV,
        task=task_id,
        reward=reward,
        score=score_from_reward(reward, components),
        policy=drop_none({"kind": "external", "name": config.get("agent"), "model": config.get("model")}),
        harness=drop_none(
            {"temperature": config.get("temperature"), "user_model": config.get("user_model"), "user_strategy": config.get("user_strategy")}
        ),
        meta=meta,
    )
    set_termination(header, termination)
    record.done()
    return new_record(header=header, steps=steps.steps)
