"""The 13 behaviour patterns of rule-based users, registered in speech.PATTERNS on import.

Each pattern is a pure function of (its parameters, the plan or the text, the UserState, the simulator's RNG): it
draws from the RNG only when it has a choice to make, so a conversation replays exactly. Patterns are applied once
per user turn, in PATTERN_ORDER (profiles.py sorts a profile's patterns into it): the ones that choose what is said
first, then terse (it trims the answer, not the complaints added after it), then the ones that add complaints and
asides; typos last, on the final wording. Plan
patterns may update state.mood, state.pending_requests and their own state.memory[name]; text patterns only read.

    name                what it does                                                 parameters (defaults)
    terse               drops asides and extra volunteered facts; bare values        max_items 2, values_only True
    reveal_when_asked   gives a fact only once the agent asked for it                slip 0.0 (chance to volunteer)
    wrong_then_correct  first gives a wrong value, a correction some turns later     keys () = any, prob 1.0, delay 1, max_wrong 1
    change_mind         says no to the first confirmation, then yes a turn later     after_turn 0
    several_requests    states its pending requests together in one message          max_requests 3
    vague               a vague request first, the precise one a turn later; hedges  hedge_prob 0.3
    impatience          after some turns: mood rises, complains about the time       patience_turns 3, mood_step 0.15
    frustration         mood rises when asked again for what it gave; angry wording  mood_step 0.25, complain_at 0.5,
                                                                                     complain_turn 6, shout_at 0.75
    chatter             adds off-topic remarks                                       prob 0.4
    typos               informal spelling and typos (ids and numbers left intact)    typo_rate 0.08, informal True
    refuse              declines to share some facts the first times it is asked     keys () = the first fact asked, times 1
    ask_human           asks for a human when mood or turn passes a threshold        mood_at 0.6, turn_at 8, repeat False
    challenge           disputes claims the agent made                               prob 0.5, max_challenges 2
"""

from __future__ import annotations

import random
import re
from typing import Any

from environments.servicedesk.speech import PATTERNS, Pattern, Say, UserState, register_pattern

PATTERN_ORDER = (
    "reveal_when_asked",
    "refuse",
    "wrong_then_correct",
    "vague",
    "change_mind",
    "several_requests",
    "terse",
    "impatience",
    "frustration",
    "ask_human",
    "challenge",
    "chatter",
    "typos",
)

# Phrases the patterns write; signals.py looks for the same ones (and for what real users write) to count patterns.
IMPATIENT_LINES = ("How long is this going to take?", "Can we speed this up please?", "Come on, I don't have all day.")
FRUSTRATED_LINES = ("This is ridiculous.", "I already told you that!", "Honestly, this is unacceptable.")
CHATTER_LINES = (
    "By the way, the weather here is awful today.",
    "Sorry, my dog keeps barking in the background.",
    "Anyway, I'm in a bit of a rush, off to my sister's later.",
    "Btw, I had a coffee while waiting on hold, ha.",
)
CHALLENGE_LINES = ("Are you sure? {claim}? That's not what I was told.", "That's not right, I don't think {claim}.")
VAGUE_REQUEST = "I have a problem with my account, something like that. Can you help?"
HEDGES = ("I think", "or something like that", "maybe", "not sure")
PLEASANTRIES = (r"\bhi\b,?", r"\bhello\b,?", r"\bplease\b", r"\bthanks?( you)?\b[.!]?", r"\bkindly\b", r"\bi was wondering if\b")
INFORMAL = {"you": "u", "please": "pls", "thanks": "thx", "because": "cuz", "i am": "im", "don't": "dont", "okay": "ok"}


def _memory(state: UserState, name: str) -> dict[str, Any]:
    return state.memory.setdefault(name, {})


def _raise_mood(state: UserState, step: float) -> None:
    state.mood = round(min(1.0, state.mood + step), 6)


def wrong_value(value: str, rng: random.Random) -> str:
    """A plausible slip of the same shape: one digit changed, else two adjacent letters swapped; never `value`."""
    digits = [i for i, c in enumerate(value) if c.isdigit()]
    if digits:
        i = rng.choice(digits)
        return value[:i] + rng.choice([d for d in "0123456789" if d != value[i]]) + value[i + 1 :]
    swaps = [i for i in range(len(value) - 1) if value[i] != value[i + 1]]
    if swaps:
        i = rng.choice(swaps)
        return value[:i] + value[i + 1] + value[i] + value[i + 2 :]
    return value + "x"


# --- patterns that choose what is said ---------------------------------------------------------------------------


def _reveal_when_asked(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    return [s for s in plan if s.kind != "fact" or s.key in state.asked or (p["slip"] > 0 and rng.random() < p["slip"])]


def _refuse(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    mem = _memory(state, "refuse")
    refused: dict[str, int] = mem.setdefault("refused", {})
    keys = set(p["keys"])
    if not keys:  # no keys named: the first fact the agent asks for is the one the user is touchy about
        first = mem.get("key") or next((s.key for s in plan if s.kind == "fact" and s.key in state.asked), "")
        if first:
            mem["key"] = first
            keys = {first}
    out = []
    for s in plan:
        if s.kind == "fact" and s.key in keys and s.key in state.asked and refused.get(s.key, 0) < p["times"]:
            refused[s.key] = refused.get(s.key, 0) + 1
            out.append(Say("refuse", key=s.key))
        else:
            out.append(s)
    return out


def _wrong_then_correct(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    slips: dict[str, dict[str, Any]] = _memory(state, "wrong_then_correct").setdefault("slips", {})
    out = []
    for s in plan:
        slip = slips.get(s.key)
        if s.kind == "fact" and slip is not None and not slip["corrected"]:
            if state.turn >= slip["turn"] + p["delay"]:  # asked again once it noticed: the correction, in place
                slip["corrected"] = True
                out.append(Say("correction", key=s.key, value=slip["right"], text=slip["wrong"]))
            else:
                out.append(Say("fact", key=s.key, value=slip["wrong"]))  # stays consistent until it notices
        elif (
            s.kind == "fact"
            and slip is None
            and s.value
            and (not p["keys"] or s.key in p["keys"])
            and len(slips) < p["max_wrong"]
            and rng.random() < p["prob"]
        ):
            wrong = wrong_value(s.value, rng)
            slips[s.key] = {"wrong": wrong, "right": s.value, "turn": state.turn, "corrected": False}
            out.append(Say("fact", key=s.key, value=wrong))
        else:
            out.append(s)
    for key, slip in slips.items():
        if not slip["corrected"] and state.turn >= slip["turn"] + p["delay"]:
            slip["corrected"] = True
            out.append(Say("correction", key=key, value=slip["right"], text=slip["wrong"]))
    return out


def _change_mind(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    mem = _memory(state, "change_mind")
    if "said_no_at" in mem and not mem.get("done") and state.turn > mem["said_no_at"]:
        mem["done"] = True
        return [s for s in plan if s.kind != "confirm"] + [Say("confirm", value="yes", text="Actually, on second thought, yes, go ahead.")]
    if "said_no_at" not in mem and state.turn >= p["after_turn"] and any(s.kind == "confirm" and s.value == "yes" for s in plan):
        mem["said_no_at"] = state.turn
        return [Say("confirm", value="no", text="Hmm, wait, no. Let me think about it.") if s.kind == "confirm" else s for s in plan]
    return plan


def _several_requests(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    n = sum(s.kind == "request" for s in plan)
    if n == 0 or not state.pending_requests:
        return plan
    stated = {s.text for s in plan if s.kind == "request"}
    extra = [r for r in state.pending_requests if r not in stated][: max(0, p["max_requests"] - n)]
    state.pending_requests = [r for r in state.pending_requests if r not in extra and r not in stated]
    last = max(i for i, s in enumerate(plan) if s.kind == "request")
    return plan[: last + 1] + [Say("request", text="Also, " + r[:1].lower() + r[1:]) for r in extra] + plan[last + 1 :]


def _vague(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    mem = _memory(state, "vague")
    held: list[dict[str, str]] = mem.setdefault("held", [])
    if held:  # the precise request and its facts, a turn after the vague one
        given = {(s.kind, s.key, s.value, s.text) for s in plan}
        out = [Say(**h) for h in held if (h["kind"], h["key"], h["value"], h["text"]) not in given] + plan
        held.clear()
        return out
    if mem.get("used") or not any(s.kind == "request" for s in plan):
        return plan
    mem["used"] = True
    held.extend({"kind": s.kind, "key": s.key, "value": s.value, "text": s.text} for s in plan if s.kind in ("request", "fact"))
    return [Say("request", text=VAGUE_REQUEST)] + [s for s in plan if s.kind not in ("request", "fact")]


def _vague_text(p: dict[str, Any], text: str, state: UserState, rng: random.Random) -> str:
    """A hedge at the end of the first sentence: "My account id is A-1042, I think." """
    match = re.search(r"[.!?]", text)
    if match is None or rng.random() >= p["hedge_prob"]:
        return text
    return f"{text[: match.start()]}, {rng.choice(HEDGES)}{text[match.start() :]}"


# --- patterns that add to the turn -------------------------------------------------------------------------------


def _impatience(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    if state.turn < p["patience_turns"]:
        return plan
    _raise_mood(state, p["mood_step"])
    return plan + [Say("question", text=rng.choice(IMPATIENT_LINES))]


def _frustration(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    reasked = [k for k in state.asked if k in state.revealed]
    if reasked:
        _raise_mood(state, p["mood_step"] * len(reasked))
    if state.mood < p["complain_at"] or not (reasked or state.turn >= p["complain_turn"]):
        return plan
    return [Say("chatter", text=rng.choice(FRUSTRATED_LINES))] + plan


def _frustration_text(p: dict[str, Any], text: str, state: UserState, rng: random.Random) -> str:
    if state.mood < p["shout_at"]:
        return text
    words = text.split()
    long_words = [i for i, w in enumerate(words) if len(w) > 3 and w.isalpha()]
    if long_words:
        i = rng.choice(long_words)
        words[i] = words[i].upper()
    return re.sub(r"[.!]?$", "!!", " ".join(words), count=1)


def _ask_human(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    mem = _memory(state, "ask_human")
    if (mem.get("asked") and not p["repeat"]) or any(s.kind == "human" for s in plan):
        return plan
    if state.mood >= p["mood_at"] or state.turn >= p["turn_at"]:
        mem["asked"] = True
        return plan + [Say("human")]
    return plan


def _challenge(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    done: list[str] = _memory(state, "challenge").setdefault("claims", [])
    for claim in state.agent_claims:
        if claim in done or len(done) >= p["max_challenges"]:
            continue
        done.append(claim)  # each claim gets one chance of being disputed
        if rng.random() < p["prob"]:
            return plan + [Say("challenge", text=rng.choice(CHALLENGE_LINES).format(claim=claim.rstrip(".?!")))]
    return plan


def _chatter(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    if rng.random() >= p["prob"]:
        return plan
    return plan + [Say("chatter", text=rng.choice(CHATTER_LINES))]


# --- patterns that change the wording ----------------------------------------------------------------------------


def _terse(p: dict[str, Any], plan: list[Say], state: UserState, rng: random.Random) -> list[Say]:
    """Asides go; volunteered facts past max_items go (they come back when asked); what the task needs stays."""
    kept = [s for s in plan if s.kind not in ("chatter", "question")] or plan[:1]
    out: list[Say] = []
    for s in kept:
        if s.kind == "fact" and s.key not in state.asked and len(out) >= p["max_items"]:
            continue
        out.append(s)
    return out


def _terse_text(p: dict[str, Any], text: str, state: UserState, rng: random.Random) -> str:
    for pleasantry in PLEASANTRIES:
        text = re.sub(pleasantry, "", text, flags=re.IGNORECASE)
    if p["values_only"]:  # "My account id is A-1042." -> "A-1042." (the agent asked for it, it knows what it is)
        text = re.sub(r"\b[Mm]y [\w' -]{1,30}? (is|was) ", "", text)
    text = re.sub(r"\s+([,.!?])", r"\1", " ".join(text.split()))  # no space left before punctuation
    text = re.sub(r",+([,.!?])", r"\1", text)  # nor a comma whose words went
    return re.sub(r"\b[Yy]es, go ahead\b", "yes", text).strip(" ,")


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(len(word) - 1)
    op = rng.choice(("swap", "drop", "double"))
    if op == "swap":
        return word[:i] + word[i + 1] + word[i] + word[i + 2 :]
    if op == "drop":
        return word[:i] + word[i + 1 :]
    return word[: i + 1] + word[i] + word[i + 1 :]


def _typos(p: dict[str, Any], text: str, state: UserState, rng: random.Random) -> str:
    if p["informal"]:
        for formal, informal in INFORMAL.items():
            text = re.sub(rf"\b{formal}\b", informal, text, flags=re.IGNORECASE)
        text = text[:1].lower() + text[1:]
        text = text.rstrip(".")
    words = text.split(" ")
    for i, w in enumerate(words):
        # ids, amounts and dates stay intact: a typo there would change the task, not the style
        if len(w) > 3 and w.isalpha() and w.islower() and rng.random() < p["typo_rate"]:
            words[i] = _typo(w, rng)
    return " ".join(words)


for _p in (
    Pattern(
        "terse",
        "short answers: asides dropped, volunteered facts only up to max_items items, no pleasantries, bare values (values_only)",
        {"max_items": 2, "values_only": True},
        plan=_terse,
        text=_terse_text,
    ),
    Pattern(
        "reveal_when_asked",
        "gives a fact only when the agent asked for it (slip: chance to volunteer it anyway)",
        {"slip": 0.0},
        plan=_reveal_when_asked,
    ),
    Pattern(
        "wrong_then_correct",
        "gives a wrong value for a fact first (one digit or two letters off) and a correction `delay` turns later",
        {"keys": (), "prob": 1.0, "delay": 1, "max_wrong": 1},
        plan=_wrong_then_correct,
    ),
    Pattern(
        "change_mind",
        "answers no to the first confirmation asked at or after after_turn, then yes the next turn",
        {"after_turn": 0},
        plan=_change_mind,
    ),
    Pattern(
        "several_requests",
        "with its first request, states its pending requests too (at most max_requests in one message)",
        {"max_requests": 3},
        plan=_several_requests,
    ),
    Pattern(
        "vague",
        "opens with a vague request and gives the precise one (and its facts) a turn later; hedges its wording",
        {"hedge_prob": 0.3},
        plan=_vague,
        text=_vague_text,
    ),
    Pattern(
        "impatience",
        "from turn patience_turns on, each turn raises mood by mood_step and complains about the time",
        {"patience_turns": 3, "mood_step": 0.15},
        plan=_impatience,
    ),
    Pattern(
        "frustration",
        "each fact asked again raises mood by mood_step; complains above complain_at; shouts above shout_at",
        {"mood_step": 0.25, "complain_at": 0.5, "complain_turn": 6, "shout_at": 0.75},
        plan=_frustration,
        text=_frustration_text,
    ),
    Pattern("chatter", "adds an off-topic remark with probability prob per turn", {"prob": 0.4}, plan=_chatter),
    Pattern(
        "typos",
        "informal spelling (u, pls, thx, lower case) and typos in typo_rate of plain words; ids and numbers intact",
        {"typo_rate": 0.08, "informal": True},
        text=_typos,
    ),
    Pattern(
        "refuse",
        "declines to share the facts in keys (default: the first fact asked) the first `times` times they are asked",
        {"keys": (), "times": 1},
        plan=_refuse,
    ),
    Pattern(
        "ask_human",
        "asks for a human once mood >= mood_at or turn >= turn_at (once, or every turn if repeat)",
        {"mood_at": 0.6, "turn_at": 8, "repeat": False},
        plan=_ask_human,
    ),
    Pattern(
        "challenge",
        "disputes each new claim of the agent with probability prob, at most max_challenges times",
        {"prob": 0.5, "max_challenges": 2},
        plan=_challenge,
    ),
):
    register_pattern(_p)
assert set(PATTERN_ORDER) <= set(PATTERNS) and len(PATTERN_ORDER) == 13, "PATTERN_ORDER names the 13 patterns"
