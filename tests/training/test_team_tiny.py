"""The tiny local model as the actor of a team, with a scripted critic (every 2 steps) and an anchor consultant.

The runner's Team support is part 1 of issue 15: the first test is written against the contract
(environments/roles.py) and is an expected failure until it is merged. The second plays the same team with a
minimal stand-in loop (the runner's own apply_action for the actor, the critic's turn appended as its step), so
what training owns is checked end to end today: advice in the actor's next prompt, its masks, the critic view.
"""

from __future__ import annotations

from typing import Any

import pytest

from environments.core import Action, Policy, ToolSpec
from environments.registry import make
from environments.roles import RoleSpec, Team
from environments.runner import apply_action, opening_step, run_episode
from environments.toolgym.anchors import ExpertPolicy
from environments.trajectory import make_step, new_record
from training.data import tokenize_record
from training.policies import policy_from_config
from training.role_views import tokenize_role

ADVICE = "Look the item up, then answer with its color."


class BobTheCritic(Policy):
    """A scripted critic: the same advice every time (a stand-in for a model critic)."""

    name = "bob"

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        return Action(message=ADVICE)

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": "scripted"}


def _actor(tiny_path: Any, env: Any) -> Policy:
    config = {"kind": "hf", "name": "tiny", "model": str(tiny_path), "sampling": {"device": "cpu"}, "harness": {"max_new_tokens": 16}}
    return policy_from_config(config, env, 0)


@pytest.mark.slow
def test_the_runner_plays_the_tiny_actor_with_a_scripted_critic_and_an_anchor_consultant(tiny_path: Any, tokenizer: Any) -> None:
    env = make("toolgym/lookup", seed=0)
    team = Team(
        actor=_actor(tiny_path, env), critic=RoleSpec(policy=BobTheCritic(), every=2), consultant=RoleSpec(policy=ExpertPolicy(), cost=0.01)
    )
    record = run_episode(env, team, max_steps=4)  # the runner call that needs part 1
    header, steps = record["header"], record["steps"]
    actor = [s for s in steps if s["source"] == "agent" and not s.get("role")]
    critic = [s for s in steps if s.get("role") == "critic"]
    assert actor and all(s["token_ids"] and len(s["logprobs"]) == len(s["token_ids"]) for s in actor)
    assert len(critic) == len(actor) // 2 and all(s["message"] == ADVICE and not s["tool_calls"] for s in critic)
    assert header["roles"]["critic"]["turns"] == len(critic)
    consultations = sum(1 for s in actor for c in s["tool_calls"] if c["name"] == "consult")
    assert header["reward"] == pytest.approx(header["score"]["composite"] - 0.01 * consultations)
    trained = "".join(tokenizer.decode(e.input_ids[a:b]) for e in tokenize_record(record, tokenizer) for _, a, b in e.agent_spans)
    assert ADVICE not in trained
    assert [e.meta["step"] for e in tokenize_role(record, tokenizer, role="critic")] == [s["index"] for s in critic]


def _play_with_a_critic(env: Any, actor: Policy, critic: Policy, *, every: int, turns: int) -> dict[str, Any]:
    """Stand-in for part 1's runner: the actor's steps as the runner records them, a critic step after every `every`."""
    steps = [opening_step(env)]
    chain, tools = steps[0]["state_hash"], env.tools()
    for turn in range(1, turns + 1):
        step, chain, _ = apply_action(env, actor.act(steps, tools), index=len(steps), chain=chain)
        steps.append(step)
        if env.done:
            break
        if turn % every == 0:
            advice = critic.act(steps, [])
            steps.append(make_step(index=len(steps), source="agent", role="critic", message=advice.message, state_hash=chain))
    header = {**env.header(), "policy": actor.describe(), "source": "rollout", "tools": [t.openai_schema() for t in tools]}
    header.update(score=env.score().to_dict(), reward=env.score().composite, termination_reason="max_steps")
    return new_record(header=header, steps=steps)


@pytest.mark.slow
def test_the_tiny_actor_reads_the_critics_advice_and_trains_only_on_its_own_tokens(tiny_path: Any, tokenizer: Any) -> None:
    env = make("toolgym/lookup", seed=0)
    record = _play_with_a_critic(env, _actor(tiny_path, env), BobTheCritic(), every=2, turns=3)
    steps = record["steps"]
    assert [s.get("role") for s in steps[1:]] == [None, None, "critic", None]
    after = tokenizer.decode(steps[4]["prompt_token_ids"])
    before = tokenizer.decode(steps[2]["prompt_token_ids"])
    assert f"<|im_start|>user\nCritic: {ADVICE}<|im_end|>" in after and "Critic:" not in before
    # the actor's sampled ids, never re-tokenized (a prompt re-rendered from a malformed turn starts a new sequence)
    episodes = tokenize_record(record, tokenizer)
    spans = [(e, step, start, end) for e in episodes for step, start, end in e.agent_spans]
    assert [step for _, step, _, _ in spans] == [1, 2, 4]
    for episode, step, start, end in spans:
        assert episode.input_ids[start:end] == steps[step]["token_ids"]
    assert sum(sum(e.mask) for e in episodes) == sum(len(steps[i]["token_ids"]) for i in (1, 2, 4))
    (example,) = tokenize_role(record, tokenizer, role="critic")
    trained = "".join(tokenizer.decode([i]) for i, m in zip(example.input_ids, example.mask, strict=True) if m)
    assert trained == f"{ADVICE}<|im_end|>" and example.reward == record["header"]["reward"]
