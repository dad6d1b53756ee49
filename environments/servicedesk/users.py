"""The rule-based user: a seeded, deterministic caller that pursues its goal and answers what it is asked.

    user = RuleUser(goal, PROFILES["cooperative"], seed)    # the `user` slot's default (EnvMeta.roles)
    user.opening()                                           # the first message (the environment's observation)
    user.act(history, tools)                                 # Action(message=...): the reply to the agent's last message

Each turn is decided as Say items (environments.servicedesk.speech) from the goal and the agent's last message:
a confirmation question gets yes or no (no when the goal says the caller declines), each fact the agent asks for
gets its value (or "I don't know" for one the caller lacks), "anything else?" gets the next unstated request or a
goodbye. The profile's behaviour patterns then rewrite the plan and the text (apply_patterns, style_text), and a
goodbye carries STOP_MARK, added after styling so no pattern can garble it.

The user keeps no state between calls: every act re-plays the whole conversation from the history with a fresh
RNG seeded by the episode's seed, so a resumed episode, a replay and a fresh run say exactly the same things.
"""

from __future__ import annotations

import random
import re

from environments.core import Action, Policy, ToolSpec
from environments.records import Step
from environments.roles import ACTOR, step_role
from environments.servicedesk.dialogue import STOP_MARK, asked_keys, asks_confirmation, closing_question
from environments.servicedesk.profiles import PROFILES as BEHAVIOUR_PROFILES
from environments.servicedesk.speech import Profile, Say, UserState, apply_patterns, style_text
from environments.servicedesk.tasks import Goal

# The behaviour profiles a user_profile option may name; patterns and profiles (profiles.py) add theirs here.
# The behaviour profiles (profiles.py: cooperative, terse, guarded, confused, impatient, difficult, chatty).
PROFILES: dict[str, Profile] = BEHAVIOUR_PROFILES
DEFAULT_PROFILE = "cooperative"

LABELS = {
    "phone": "phone number",
    "date_of_birth": "date of birth",
    "postcode": "postcode",
    "order_id": "order number",
    "card_last4": "card's last four digits",
    "new_email": "new email address",
    "plan": "plan",
}


def _fact(key: str, value: str) -> str:
    if key == "card_last4":
        return f"The card ends in {value}."
    if key == "new_email":
        return f"The new email is {value}."
    return f"My {LABELS.get(key, key.replace('_', ' '))} is {value}."


def render(plan: list[Say], state: UserState) -> str:
    """The plan in words, item by item; a pattern's own text (Say.text) wins over the default wording."""
    out: list[str] = []
    for say in plan:
        label = LABELS.get(say.key, say.key.replace("_", " "))
        if say.text and say.kind not in ("fact", "correction"):
            out.append(say.text)
        elif say.kind == "fact":
            out.append(say.text or _fact(say.key, say.value))
        elif say.kind == "confirm":
            out.append("Yes, please go ahead." if say.value == "yes" else "No, please don't do that.")
        elif say.kind == "correction":
            out.append(f"Sorry, I got that wrong: my {label} is {say.value}" + (f", not {say.text}." if say.text else "."))
        elif say.kind == "human":
            out.append("Can I speak to a human, please?")
        elif say.kind == "close":
            out.append("That's all, thank you. Goodbye!")
        elif say.kind == "refuse":
            out.append(f"I'd rather not give my {label}.")
    return " ".join(out)


def _claims(message: str) -> list[str]:
    """The agent's statements (not questions) the user may later challenge."""
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", message) if s.strip() and not s.strip().endswith("?")]


class RuleUser(Policy):
    name = "rule-user"

    def __init__(self, goal: Goal, profile: Profile, seed: int) -> None:
        self.goal, self.profile, self.seed = goal, profile, seed
        self.name = f"rule-user:{profile.name}"

    def _fresh(self) -> tuple[UserState, random.Random]:
        state = UserState(pending_requests=list(self.goal.requests[1:]))
        return state, random.Random(f"servicedesk/user/{self.goal.template}/{self.seed}/{self.profile.name}")

    def _say(self, plan: list[Say], state: UserState, rng: random.Random) -> str:
        plan = apply_patterns(self.profile, plan, state, rng)
        for say in plan:
            if say.kind in ("fact", "correction") and say.key:
                state.revealed[say.key] = say.value
        text = style_text(self.profile, render(plan, state), state, rng)
        return f"{text} {STOP_MARK}" if any(s.kind == "close" for s in plan) else text

    def opening(self) -> str:
        state, rng = self._fresh()
        return self._say([Say("request", text=self.goal.requests[0])], state, rng)

    def _turn(self, message: str, state: UserState, rng: random.Random) -> str:
        state.turn += 1
        state.asked = asked_keys(message)
        state.agent_claims = [*state.agent_claims, *_claims(message)][-8:]
        plan: list[Say] = []
        if asks_confirmation(message):
            plan.append(Say("confirm", value="no" if self.goal.decline else "yes"))
        for key in state.asked:
            if key in self.goal.facts:
                plan.append(Say("fact", key=key, value=self.goal.facts[key]))
            else:
                plan.append(Say("question", text=f"I don't know my {LABELS.get(key, key)}, sorry. Do you need it?"))
        if not plan and closing_question(message):
            if state.pending_requests:
                plan.append(Say("request", text=state.pending_requests.pop(0)))
            else:
                plan.append(Say("close"))
        if not plan:
            plan.append(
                Say("question", text="Okay. What happens next?" if "?" not in message else f"Sorry, I'm not sure. {self.goal.requests[0]}")
            )
        return self._say(plan, state, rng)

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        state, rng = self._fresh()
        self._say([Say("request", text=self.goal.requests[0])], state, rng)  # the opening, so the RNG is where it was
        said = [str(s["message"]) for s in history if step_role(s) == ACTOR and s.get("source") != "env" and s.get("message")]
        reply = ""
        for message in said:
            reply = self._turn(message, state, rng)
        return Action(message=reply or "Hello?")


def goal_card(goal: Goal, profile: Profile) -> str:
    """What a model or a human in the user slot is told (RoleSlot.brief): the goal, persona and known facts."""
    facts = "\n".join(f"- {LABELS.get(k, k)}: {v}" for k, v in goal.facts.items())
    requests = "\n".join(f"{i + 1}. {r}" for i, r in enumerate(goal.requests))
    decline = "\nWhen the agent asks you to confirm a change, say no: you changed your mind." if goal.decline else ""
    return (
        f"You are a Kestrel Telecom customer calling the service desk: {goal.persona}.\n"
        f"What you want (say one thing at a time; start with the first):\n{requests}\n"
        f"What you know (give it only when the agent asks for it):\n{facts}\n"
        f"Behaviour profile: {profile.name}.{decline}\n"
        f"Answer confirmation questions with a plain yes or no. When everything is handled, say goodbye and end your "
        f"message with {STOP_MARK}."
    )
