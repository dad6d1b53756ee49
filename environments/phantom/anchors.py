"""Scripted anchors for phantom tasks: oracle > multisearch > keyword > random, the ladder results are read against.

- oracle: privileged; follows the gold chain (searches each supporting article's title, opens it) and answers
  the gold answer. Its score is the ceiling the environment allows, 1.0 unless the budget is too small.
- keyword: a search baseline with no reasoning: searches the question's content words, opens the best hit and
  answers the first span in it of the type the question asks for (a year, a number, a name), not already
  in the question. It solves some one-hop questions and few multi-hop ones.
- random: searches random question words, opens random results and answers a random span it has seen.
- multisearch: no privileged access, but it reads. It parses the question into an anchor and a chain of relations
  (reading.py), finds each entity with several query reformulations (the mention, the canonical names an alias may
  stand for, the mention with its kind), opens the result whose title fits the mention, reads the next entity's
  mention out of the opened article and follows it; it checks a constrained anchor's occupation against the
  search snippet (the article's lead) before opening, and for a comparison reads both values before it answers.

All four decide from the history and their own seeded RNG (never the global one), so a run replays exactly.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable, Generator
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.phantom.env import PhantomEnv
from environments.phantom.reading import (
    Description,
    Plan,
    expansions,
    lead_occupation,
    parse_question,
    read_attribute,
    read_relation,
    title_fits,
)
from environments.phantom.universe import derive_seed
from environments.phantom.world import RELATIONS
from environments.records import Step

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


def agent_steps(history: list[Step]) -> list[Step]:
    return [s for s in history if s.get("source") == "agent"]


def seen_contents(history: list[Step]) -> list[dict[str, Any]]:
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

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
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

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
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

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
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


Call = tuple[str, dict[str, Any]]
Script = Generator[Call, "dict[str, Any] | None", None]
SEARCH_K = 5  # the tool's default: short results, as a model trained on these episodes will see them
KIND_WORDS = {"person": "born", "city": "city", "country": "country", "organisation": "founded", "work": "work", "event": "held"}


class _OutOfCalls(Exception):
    """Raised inside the script when only the answer call is left."""


class MultiSearchPolicy(Policy):
    """The multisearch anchor (module docstring). The plan is a generator script (`_solve`) that yields tool calls
    and receives their results; each act() replays it over the history's results, so the policy is a pure function
    of the history, like the other anchors (O(n^2) replays, n <= max_steps: microseconds here)."""

    name = "multisearch"

    def __init__(self, question: str, max_steps: int) -> None:
        self.question = question
        self.max_steps = max_steps
        self.plan: Plan | None = parse_question(question)

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        results = [_first_result(step) for step in agent_steps(history)]
        self.guess = ""
        self.used = 0
        script = self._solve()
        try:
            call = next(script)
            for result in results:
                call = script.send(result)
        except StopIteration:
            call = ("answer", {"text": self.guess or self.question.split(" ")[-1]})
        return _call(call[0], len(results), **call[1])

    # --- the script: yields calls, receives results (None for an error) ------------------------------------------

    def _tool(self, name: str, **arguments: Any) -> Generator[Call, dict[str, Any] | None, dict[str, Any] | None]:
        if self.used >= self.max_steps - 1:
            raise _OutOfCalls
        self.used += 1
        return (yield (name, arguments))

    def _solve(self) -> Script:
        try:
            if self.plan is None:
                raise _OutOfCalls  # no phrasing fits: answer what little there is
            if self.plan.ask == "comparison":
                yield from self._compare(self.plan)
            else:
                found = yield from self._follow(self.plan.sides[0])
                if found is not None:
                    yield from self._finish(self.plan, *found)
        except _OutOfCalls:
            pass
        yield ("answer", {"text": self.guess or self.question.split(" ")[-1]})

    def _follow(self, side: Description) -> Generator[Call, dict[str, Any] | None, tuple[dict[str, Any], str] | None]:
        """Open the anchor's article, then each related entity's in turn; (last article, its kind) or None."""
        kinds = side.kinds() if not side.relations else (side.relations[0][0],)
        article = yield from self._find_anchor(side, kinds[0] if len(kinds) == 1 else None)
        kind = kinds[0] if len(kinds) == 1 else None
        for relation_kind, relation in side.relations:
            if article is None:
                return None
            mention = read_relation(article["text"], article["title"], relation_kind, relation)
            if mention is None:
                return None
            self.guess = mention
            kind = RELATIONS[(relation_kind, relation)]
            article = yield from self._find(mention, kind)
        return (article, kind or "") if article is not None else None

    def _find_anchor(self, side: Description, kind: str | None) -> Generator[Call, dict[str, Any] | None, dict[str, Any] | None]:
        anchor = side.anchor
        if not anchor.occupation:
            return (yield from self._find(anchor.text, kind))
        # constrained: the namesake whose lead (the search snippet) states the occupation
        for query in (f"{anchor.text} {anchor.occupation}", anchor.text):
            result = yield from self._tool("search", query=query, k=SEARCH_K)
            for hit in (result or {}).get("results", []):
                if hit["title"].split(" ")[-1] == anchor.text and lead_occupation(hit["snippet"]) == anchor.occupation:
                    return (yield from self._tool("open_article", article_id=hit["article_id"]))
        return None

    def _find(self, mention: str, kind: str | None) -> Generator[Call, dict[str, Any] | None, dict[str, Any] | None]:
        """Search reformulations of `mention` until a result's title fits it, then open that result."""
        names = expansions(mention, kind)
        second = " ".join(names) if names else f"{mention} {KIND_WORDS.get(kind or '', '')}".strip()
        # the mention; the names an alias may stand for (or the mention with its kind); both again, twice as deep
        for query, k in dict.fromkeys([(mention, SEARCH_K), (second, SEARCH_K), (mention, 2 * SEARCH_K), (second, 2 * SEARCH_K)]):
            result = yield from self._tool("search", query=query, k=k)
            hits = (result or {}).get("results", [])
            fitting = [h for h in hits if title_fits(h["title"], mention, kind)]
            if fitting:
                return (yield from self._tool("open_article", article_id=fitting[0]["article_id"]))
        return None

    def _finish(self, plan: Plan, article: dict[str, Any], kind: str) -> Script:
        if plan.ask == "entity":
            assert plan.final is not None
            mention = read_relation(article["text"], article["title"], *plan.final)
            if mention is None:
                return
            self.guess = mention
            if RELATIONS[plan.final] == "country" and mention.endswith("ian"):  # a demonym names no country: find the name
                found = yield from self._find(mention, "country")
                self.guess = found["title"] if found is not None else mention
            return
        for candidate_kind, attribute in plan.attribute:
            value = read_attribute(article["text"], article["title"], candidate_kind, attribute)
            if value is not None and candidate_kind in (kind, ""):
                self.guess = value
                return
        for candidate_kind, attribute in plan.attribute:  # the kind was unknown (a one-hop question)
            value = read_attribute(article["text"], article["title"], candidate_kind, attribute)
            if value is not None:
                self.guess = value
                return

    def _compare(self, plan: Plan) -> Script:
        """Read the attribute at the end of both sides; answer the winner's title only once both values are read."""
        ((kind, attribute),) = plan.attribute
        ends = []
        for side in plan.sides:
            found = yield from self._follow(side)
            value = read_attribute(found[0]["text"], found[0]["title"], kind, attribute) if found else None
            ends.append((found[0]["title"] if found else None, _as_int(value)))
            if ends[-1][0] is not None and not self.guess:
                self.guess = str(ends[-1][0])
        (title_a, value_a), (title_b, value_b) = ends
        if value_a is not None and value_b is not None and value_a != value_b:
            self.guess = str(title_a if (value_a < value_b) == plan.smaller_wins else title_b)


def _as_int(value: str | None) -> int | None:
    digits = (value or "").replace(",", "")
    return int(digits) if digits.isdigit() else None


def _first_result(step: Step) -> dict[str, Any] | None:
    """The step's first tool result as a dict, None when it was an error."""
    results = step.get("results") or []
    if not results or results[0].get("is_error"):
        return None
    content = results[0].get("content")
    if isinstance(content, str):
        try:
            content = json.loads(content)
        except ValueError:
            return None
    return content if isinstance(content, dict) and "error" not in content else None


def phantom_anchor(name: str, env: PhantomEnv, seed: int) -> Policy:
    """The anchor `name` for one episode of `env`; `seed` seeds the random anchor."""
    if name == "oracle":
        return OraclePolicy(env)
    if name == "keyword":
        return KeywordPolicy(env.question.text)
    if name == "random":
        return RandomPolicy(env.question.text, seed)
    if name == "multisearch":
        return MultiSearchPolicy(env.question.text, env.config.max_steps)
    raise KeyError(f"no phantom anchor {name!r}; anchors are {', '.join(ANCHOR_NAMES)}")


def anchor_factory(name: str) -> Callable[[Env, int], Policy]:
    """A policy factory in the shape environments.policies.register_policy takes."""

    def make(env: Env, seed: int) -> Policy:
        assert isinstance(env, PhantomEnv), f"the phantom {name} anchor needs a PhantomEnv, got {type(env).__name__}"
        return phantom_anchor(name, env, seed)

    return make


ANCHOR_NAMES: tuple[str, ...] = ("oracle", "multisearch", "keyword", "random")
