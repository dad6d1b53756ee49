"""The toolgym step analyzer: rules from the task's question and what the tools returned (environments.analyzers).

Rules, first match wins:
    a failed call (unknown tool, bad arguments, no call at all)                      value 0
    owner(person) of someone other than the asked person (chain)                     value 0.1
    lookup(item) before asking the owner (chain), or of an item other than the asked one  value 0.1–0.2
    lookup of an item whose color is already known                                   value 0.3
    answer(color) before the asked item's color was seen                             value 0
    answer(color) with a color other than the one the lookup returned                value 0
    say(word) with a word other than the asked one (echo); a guess the reward rejected  value 0
    anything else (the step the expert would take)                                   value 1
The analyzer reads only the question (the first observation) and the tool results in the history: what the
agent itself saw.
"""

from __future__ import annotations

from typing import Any

from environments.analyzers import NO_PROBLEM, StepAnalysis
from environments.records import Step, call_arguments
from environments.rule_critic import env_calls, failure_advice
from environments.toolgym.anchors import _PERSON, _TARGET, _question, _results


def _seen_color(seen: list[dict[str, Any]], item: str | None) -> str | None:
    return next((str(r["color"]) for r in seen if r.get("item") == item and "color" in r), None)


class ToolGymAnalyzer:
    def analyze(self, history: list[Step], step: Step) -> StepAnalysis:
        failed = failure_advice(step)
        if failed:
            return StepAnalysis(failed, 0.0)
        calls = env_calls(step)
        if not calls:
            return StepAnalysis("Call a tool: every turn should make one call as <tool_call>{...}</tool_call>.", 0.0)
        call = calls[0]
        argument = str(next(iter(call_arguments(call).values()), ""))  # unparsed arguments: ""
        question, seen = _question(history), _results(history)
        target, person = _TARGET.search(question), _PERSON.search(question)
        if call["name"] == "say":
            return self._say(argument, target.group(1) if target else None, step)
        asked = target.group(1) if target else None
        if person:  # chain: the asked item is whatever owner() said the person owns
            asked = next((str(r["item"]) for r in seen if r.get("person") == person.group(1) and "item" in r), None)
            if call["name"] == "owner" and argument != person.group(1):
                return StepAnalysis(f"The question asks about {person.group(1)}, not {argument}: call owner({person.group(1)}).", 0.1)
            if call["name"] == "owner" and asked is not None:
                return StepAnalysis(f"You already know {person.group(1)} owns the {asked}: look it up.", 0.3)
            if call["name"] != "owner" and asked is None:
                return StepAnalysis(f"First find what {person.group(1)} owns: call owner({person.group(1)}).", 0.2)
        if call["name"] == "lookup":
            return self._lookup(argument, asked, seen)
        if call["name"] == "answer":
            return self._answer(argument, asked, seen)
        return StepAnalysis(NO_PROBLEM, 1.0)

    def _lookup(self, item: str, asked: str | None, seen: list[dict[str, Any]]) -> StepAnalysis:
        if asked is not None and item != asked:
            return StepAnalysis(f"You looked up the {item}, but the question is about the {asked}: call lookup({asked}).", 0.1)
        known = _seen_color(seen, item)
        if known is not None:
            return StepAnalysis(f"You already saw that the {item} is {known}: answer({known}).", 0.3)
        return StepAnalysis(NO_PROBLEM, 1.0)

    def _answer(self, color: str, asked: str | None, seen: list[dict[str, Any]]) -> StepAnalysis:
        known = _seen_color(seen, asked)
        if known is None:
            return StepAnalysis(f"You answered before seeing the color of the {asked}: call lookup({asked}) first.", 0.0)
        if color != known:
            return StepAnalysis(f"The lookup said the {asked} is {known}, but you answered {color}: answer({known}).", 0.0)
        return StepAnalysis(NO_PROBLEM, 1.0)

    def _say(self, word: str, asked: str | None, step: Step) -> StepAnalysis:
        if asked is not None:  # echo
            if word != asked:
                return StepAnalysis(f"The asked word is {asked}, not {word}: say({asked}).", 0.0)
            return StepAnalysis(NO_PROBLEM, 1.0)
        if float(step.get("reward") or 0.0) < 1.0:  # guess: only the reward tells
            return StepAnalysis(f"The reward says {word} is not the secret word: guess another word.", 0.0)
        return StepAnalysis(NO_PROBLEM, 1.0)
