"""Exact replay: rebuild an environment from a record's seed and actions and check the state-hash chain.

    chain = replay_prefix(env, steps)      # env freshly made; raises ReplayDivergence naming the step
    for step, chain in replay_steps(env, steps): ...   # the same, one verified step at a time
    report = replay_record(record)         # a fresh env from the registry; {"ok", "steps", "divergence"}
                                           # (a dreamed record: {"ok": False, "refused": why}, nothing replayed)

Steps of source "env" are observations (step 0 is the opening one); every other step's tool calls are
re-executed unless the runner marked the action invalid (`meta.invalid_action`), which changed nothing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from environments.core import Env, EnvError, ToolCall, chain_hash
from environments.records import Header, Record, Step, header_composite
from environments.registry import env_meta, make
from environments.roles import ACTOR, is_runner_call, step_role


class ReplayDivergence(Exception):
    def __init__(self, index: int, expected: str | None, got: str) -> None:
        super().__init__(f"state hash diverged at step {index}: record has {expected}, replay gives {got}")
        self.index = index
        self.expected = expected
        self.got = got


def replay_prefix(env: Env, steps: list[Step]) -> str:
    """Re-apply `steps` to a freshly reset `env`; returns the chain hash after the last step."""
    chains = [chain for _, chain in replay_steps(env, steps)]
    return chains[-1] if chains else ""


def replay_steps(env: Env, steps: list[Step]) -> Iterator[tuple[Step, str]]:
    """Re-apply `steps` one at a time, yielding (step, chain hash) once each is applied and verified, so a caller
    can read the environment between steps (the desktop's world-model export reads its screen there)."""
    chain = ""
    for step in steps:
        if step["source"] == "env":
            if step["index"] == 0:
                env.reset()
            chain = chain_hash(chain, env.state_hash())
        else:
            if not step.get("meta", {}).get("invalid_action"):
                for call in step.get("tool_calls", []):
                    if is_runner_call(call):  # ask_critic / consult: the runner answered it, the env never saw it
                        continue
                    # arguments that were a string (JSON that did not parse) go back as recorded: the env refuses them again
                    arguments = cast(dict[str, Any], call["arguments"])
                    env.step(ToolCall(name=call["name"], arguments=arguments, id=call.get("id", "")))
                if heard_by(env, step_role(step), step.get("message")):
                    env.hear(step_role(step), step["message"])
            chain = chain_hash(chain, env.state_hash())
        if step.get("state_hash") is not None and step["state_hash"] != chain:
            raise ReplayDivergence(step["index"], step["state_hash"], chain)
        yield step, chain


def heard_by(env: Env, role: str, message: Any) -> bool:
    """Whether a step's message is spoken to the environment (Env.hear): the actor's and its role slots' own
    non-empty text messages; a critic's advice, a consultant's answer or a harness note are not."""
    if not isinstance(message, str) or not message:
        return False
    return role == ACTOR or any(slot.name == role for slot in env_meta(env.name).roles)


def dreamed_reason(header: Header) -> str | None:
    """Why a record cannot be replayed as real: it was dreamed by a world model (header.meta.dreamed), so its
    steps never ran in an environment; None for any other record."""
    meta = header.get("meta")
    if isinstance(meta, dict) and meta.get("dreamed") is True:
        return f"a dreamed trajectory (world model {meta.get('world_model') or 'unnamed'}): its screens were predicted, never played"
    return None


def env_for_header(header: Header) -> Env:
    """The environment a record was recorded in: same task, seed, options and engine version (an engine this
    installation no longer runs is refused with EnvError("unsupported_version"), never replayed on another; a
    dreamed record with EnvError("dreamed"))."""
    if reason := dreamed_reason(header):
        raise EnvError("dreamed", f"cannot replay {reason}")
    seed = header.get("seed")
    if seed is None:
        raise EnvError("no_seed", "the episode has no seed, so it cannot be replayed")
    version = header.get("env_version") or None
    return make(f"{header['env']}/{header['task']}", seed=int(seed), options=header.get("options") or None, version=version)


def replay_record(record: Record) -> dict[str, Any]:
    """Replay a whole record in a fresh environment; also checks the final score against the header."""
    header = record["header"]
    if reason := dreamed_reason(header):
        return {"ok": False, "steps": len(record["steps"]), "divergence": None, "refused": f"not replayed: {reason}"}
    env = env_for_header(header)
    try:
        replay_prefix(env, record["steps"])
    except ReplayDivergence as exc:
        return {"ok": False, "steps": len(record["steps"]), "divergence": {"step": exc.index, "expected": exc.expected, "got": exc.got}}
    score = env.score()
    recorded = header_composite(header)
    if recorded is not None and abs(recorded - score.composite) > 1e-9:
        return {"ok": False, "steps": len(record["steps"]), "divergence": {"step": "score", "expected": recorded, "got": score.composite}}
    return {"ok": True, "steps": len(record["steps"]), "divergence": None, "composite": score.composite}
