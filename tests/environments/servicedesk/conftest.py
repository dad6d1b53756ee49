"""Service-desk test helpers: a fresh desk for a task and seed and helpers that act in it; a tiny renderer of Say
items (the patterns' tests run without users.py) and a user's turn end to end."""

from __future__ import annotations

import random
from typing import Any

from environments.core import StepResult, ToolCall
from environments.policies import make_policy
from environments.registry import make
from environments.runner import run_episode
from environments.servicedesk.env import ServiceDeskEnv
from environments.servicedesk.speech import Profile, Say, UserState, apply_patterns, style_text


def new_desk(task: str = "roaming-on", seed: int = 1, **options: Any) -> ServiceDeskEnv:
    env = make(f"servicedesk/{task}", seed=seed, options=options or None)
    assert isinstance(env, ServiceDeskEnv)
    return env


def do(env: ServiceDeskEnv, name: str, **arguments: Any) -> StepResult:
    return env.step(ToolCall(name, arguments))


def verify(env: ServiceDeskEnv) -> None:
    facts = env.goal.facts
    found = do(env, "find_customer", phone=facts["phone"]).content
    assert do(
        env, "verify_identity", customer_id=found["customer_id"], date_of_birth=facts["date_of_birth"], postcode=facts["postcode"]
    ).content["verified"]


def play(task: str, anchor: str, seed: int = 1, **options: Any) -> dict[str, Any]:
    env = new_desk(task, seed, **options)
    return run_episode(env, make_policy(anchor, env, seed))


def render(plan: list[Say]) -> str:
    """Say items -> one utterance, in the plain words the cooperative simulator would use."""
    lines = {
        "request": lambda s: s.text,
        "fact": lambda s: f"My {s.key.replace('_', ' ')} is {s.value}.",
        "confirm": lambda s: s.text or ("Yes, please go ahead." if s.value == "yes" else "No, please don't."),
        "correction": lambda s: f"Sorry, I meant {s.value}, not {s.text}.",
        "question": lambda s: s.text,
        "chatter": lambda s: s.text,
        "human": lambda s: "Can I talk to a human, please?",
        "challenge": lambda s: s.text,
        "close": lambda s: "Thanks, bye.",
        "refuse": lambda s: f"I'd rather not share my {s.key.replace('_', ' ')}.",
    }
    return " ".join(lines[s.kind](s) for s in plan)


def speak(profile: Profile, plan: list[Say], state: UserState, rng: random.Random) -> str:
    """One user turn as users.py will run it: the plan patterns, the renderer, the text patterns."""
    return style_text(profile, render(apply_patterns(profile, plan, state, rng)), state, rng)


ALICE_FACTS = [Say("fact", key="account_id", value="A-1042"), Say("fact", key="postcode", value="SW1A 2AA")]
ALICE_REQUEST = Say("request", text="I want to change my plan to the unlimited one.")
