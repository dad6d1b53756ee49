"""Scripted anchors for phantom tasks: oracle > keyword > random, the ladder every result is read against.

- oracle: privileged; follows the gold chain (searches each supporting article's title, opens it) and answers
  the gold answer. Its score is the ceiling the environment allows, 1.0 unless the budget is too small.
- keyword: a search baseline with no reasoning: searches the question's content words, opens the best hit and
  answers the first span in it of the type the question asks for (a year, a number, a name), not already
  in the question. It solves some one-hop questions and few multi-hop ones.
- random: searches random question words, opens random results and answers a random span it has seen.

All three decide from the history and their own seeded RNG (never the global one), so a run replays exactly.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.phantom.env import PhantomEnv
from environments.phantom.universe import derive_seed

_STOP_WORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "by",
        "did",
        "do",
        "does",
        "for",
        "from",
        "give",
        "how",
        "in",
        "is",
        "it",
        "its",
        "lies",
        "many",
        "name",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "when",
        "where",
        "which",
        "who",
        "whose",
        "with",
        "year",
        "people",
        "live",
        "living",
        "city",
        "country",
        "organisation",
        "person",
        "work",
        "born",
        "founded",
    ]
)
_YEAR = re.compile(r"\b(1[0-9]{3}|20[0-9]{2}|[89][0-9]{2})\b")
_NUMBER = re.compile(r"\b[0-9][0-9,]{2,}\b")
_NAME = re.compile(r"\b(?:[A-Z]\. )?[A-Z][a-z]+(?: (?:of )?[A-Z][a-z]+)*")
_DESCRIPTION = re.compile(r"\b(?:was|as|is) an? ((?:[a-z]+ )?[a-z]+)[.,]")
_SENTENCE_STARTS = frozenset(
    {
        "The",
        "Born",
        "Records",
        "Parish",
        "Critics",
        "Historians",
        "Among",
        "For",
        "Since",
        "About",
        "In",
        "By",
        "Elsewhere",
        "Travellers",
        "Not",
    }
)


def agent_steps(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [s for s in history if s.get("source") == "agent"]


def seen_contents(history: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every successful tool result in the history, decoded to a dict (results may arrive as JSON text)."""
    contents = []
    for step in agent_steps(history):
        for result in step.get("results") or []:
            content = result.get("content")
            if isinstance(content, str):
                try:
                    content = json.loads(content)
                except ValueError:
                    continue
            if isinstance(content, dict) and not result.get("is_error") and "error" not in content:
                contents.append(content)
    return contents


def _call(name: str, step: int, **arguments: Any) -> Action:
    return Action(tool_calls=[ToolCall(name=name, arguments=arguments, id=f"call_{step}")])


class OraclePolicy(Policy):
    name = "oracle"

    def __init__(self, env: PhantomEnv) -> None:
        question, budget = env.question, env.config.max_steps
        search_first = 2 * len(question.support) + 1 <= budget
        self.plan: list[tuple[str, dict[str, Any]]] = []
        for article_id in question.support:
            if search_first:
                self.plan.append(("search", {"query": env.universe.by_id[article_id].title}))
            self.plan.append(("open_article", {"article_id": article_id}))
        self.plan = self.plan[: budget - 1] + [("answer", {"text": question.answer})]

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        done = len(agent_steps(history))
        name, arguments = self.plan[min(done, len(self.plan) - 1)]
        return _call(name, done, **arguments)


def expected_answer_type(question: str) -> str:
    lowered = question.lower()
    if "year" in lowered or lowered.startswith("when"):
        return "year"
    if "how many" in lowered or "population" in lowered:
        return "number"
    if "for a living" in lowered or "occupation" in lowered or "kind of work" in lowered or "what form" in lowered:
        return "description"
    return "name"


def spans_of_type(text: str, kind: str, question: str) -> list[str]:
    """Candidate answers of `kind` in `text`, in order of appearance, leaving out anything the question says."""
    if kind == "year":
        found = _YEAR.findall(text)
    elif kind == "number":
        found = [n.replace(",", "") for n in _NUMBER.findall(text)]
    elif kind == "description":
        found = _DESCRIPTION.findall(text)
    else:
        found = [n for n in _NAME.findall(text) if n.split(" ")[0] not in _SENTENCE_STARTS]
    return [span for span in found if span.lower() not in question.lower()]


class KeywordPolicy(Policy):
    name = "keyword"

    def __init__(self, question: str) -> None:
        self.question = question
        self.query = " ".join(w for w in re.findall(r"[A-Za-z0-9]+", question) if w.lower() not in _STOP_WORDS) or question

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        done = len(agent_steps(history))
        contents = seen_contents(history)
        if done == 0:
            return _call("search", done, query=self.query, k=5)
        articles = [c for c in contents if "text" in c]
        if not articles:
            hits = [r for c in contents for r in c.get("results", [])]
            if hits and done < 3:
                return _call("open_article", done, article_id=hits[0]["article_id"])
            return _call("answer", done, text=self.query.split(" ")[0])
        article = articles[0]
        spans = spans_of_type(article["text"], expected_answer_type(self.question), f"{self.question} {article['title']}")
        return _call("answer", done, text=spans[0] if spans else article["title"])


class RandomPolicy(Policy):
    name = "random"

    def __init__(self, question: str, seed: int) -> None:
        self.words = re.findall(r"[A-Za-z0-9]+", question) or ["archive"]
        self.seed = seed
        self.patience = random.Random(derive_seed("phantom-random-anchor", seed)).randint(1, 5)

    def act(self, history: list[dict[str, Any]], tools: list[ToolSpec]) -> Action:
        # Re-derive every choice from the step count so the policy is a pure function of (seed, history).
        done = len(agent_steps(history))
        rng = random.Random(derive_seed("phantom-random-anchor", self.seed, done))
        contents = seen_contents(history)
        if done >= self.patience:
            texts = [c.get("text", "") for c in contents] + [r.get("title", "") for c in contents for r in c.get("results", [])]
            spans = [s for t in texts for s in _NAME.findall(t) + _YEAR.findall(t)]
            return _call("answer", done, text=rng.choice(spans) if spans else rng.choice(self.words))
        hits = [r["article_id"] for c in contents for r in c.get("results", [])]
        if hits and rng.random() < 0.5:
            return _call("open_article", done, article_id=rng.choice(hits))
        return _call("search", done, query=" ".join(rng.sample(self.words, min(2, len(self.words)))))


def phantom_anchor(name: str, env: PhantomEnv, seed: int) -> Policy:
    """The anchor `name` for one episode of `env`; `seed` seeds the random anchor."""
    if name == "oracle":
        return OraclePolicy(env)
    if name == "keyword":
        return KeywordPolicy(env.question.text)
    if name == "random":
        return RandomPolicy(env.question.text, seed)
    raise KeyError(f"no phantom anchor {name!r}; anchors are {', '.join(ANCHOR_NAMES)}")


def anchor_factory(name: str) -> Callable[[Env, int], Policy]:
    """A policy factory in the shape environments.policies.register_policy takes."""

    def make(env: Env, seed: int) -> Policy:
        assert isinstance(env, PhantomEnv), f"the phantom {name} anchor needs a PhantomEnv, got {type(env).__name__}"
        return phantom_anchor(name, env, seed)

    return make


ANCHOR_NAMES: tuple[str, ...] = ("oracle", "keyword", "random")
