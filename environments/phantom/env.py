"""PhantomEnv: answer one multi-hop question about a fictional universe by searching and reading its corpus.

Tools
    search(query, k=5)        BM25 over the corpus; ids, titles and first sentences of the best k articles.
    open_article(article_id)  the full text of one article.
    answer(text)              the final answer; ends the episode.

Rewards
    0 on every step but `answer`, which pays the composite: normalised exact match against the gold answer
    and its aliases (task knob reward="em"), or token F1 (reward="f1"). Components always report exact_match,
    f1 and evidence_recall (the share of the gold supporting articles the agent opened).

Episode End
    `answer` (agent_stop), or the step budget running out (max_steps, composite 0). Every call counts against
    the budget, errors included. An episode without an answer scores 0.

Arguments
    task.spec holds the difficulty knobs (config.PhantomConfig); the seed picks the universe
    (seed // seeds_per_universe, within the task's split) and the question.

Version History
    1: first version.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import asdict, dataclass, field
from typing import Any

from environments.core import Env, EnvError, Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec, validate_arguments
from environments.phantom.config import PhantomConfig
from environments.phantom.questions import Question
from environments.phantom.scoring import exact_match, token_f1
from environments.phantom.search import tokenize
from environments.phantom.tools import TOOLS
from environments.phantom.universe import Universe, UniverseSpec, derive_seed, load_universe

SNIPPET_CHARS = 160

INSTRUCTIONS = (
    "You are answering a question about a fictional world. Nothing you know from outside applies: the only "
    "source is a corpus of {articles} articles. Use `search` to find articles, `open_article` to read one, and "
    "`answer` with a short answer (a name, a year or a number). You have {max_steps} tool calls in all.\n\n"
    "Question: {question}"
)


@dataclass
class EpisodeState:
    """Everything an episode changes; the universe itself is read-only and rebuilt from the seed."""

    steps: int = 0
    errors: int = 0
    opened: list[str] = field(default_factory=list)  # article ids in first-opened order
    trail: list[dict[str, Any]] = field(default_factory=list)  # the evidence trail: every call and what it saw
    answer: str | None = None
    done: bool = False
    termination_reason: str | None = None


class PhantomEnv(Env):
    name = "phantom"
    version = "1"

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.config = PhantomConfig.from_spec(task.spec)
        self.universe: Universe = load_universe(
            UniverseSpec(
                split=task.split,
                index=seed // self.config.seeds_per_universe,
                articles=self.config.articles,
                distractors=self.config.distractors,
                alias_rate=self.config.alias_rate,
            )
        )
        rng = random.Random(derive_seed("phantom-question", self.universe.spec.seed, task.key, seed))
        self.question: Question = self.universe.question(
            rng, hops=rng.choice(self.config.hops), comparison_rate=self.config.comparison_rate, constraint_rate=self.config.constraint_rate
        )
        self._state = EpisodeState()

    # --- the Env contract ---------------------------------------------------------------------------------

    def reset(self) -> Observation:
        self._state = EpisodeState()
        text = INSTRUCTIONS.format(articles=len(self.universe.articles), max_steps=self.config.max_steps, question=self.question.text)
        data = {"question": self.question.text, "articles": len(self.universe.articles), "max_steps": self.config.max_steps}
        return Observation(text=text, data=data)

    def tools(self) -> list[ToolSpec]:
        return list(TOOLS)

    @property
    def done(self) -> bool:
        return self._state.done

    @property
    def termination_reason(self) -> str | None:
        """Why the episode ended (agent_stop or max_steps); read by the runner."""
        return self._state.termination_reason

    @property
    def max_steps(self) -> int:
        """The tool-call budget; the runner uses it as its step limit."""
        return self.config.max_steps

    def step(self, call: ToolCall) -> StepResult:
        state = self._state
        if state.done:
            return _error("episode_over", "the episode is over; no further calls are taken", done=True)
        state.steps += 1
        result = self._dispatch(call)
        if result.is_error:
            state.errors += 1
            state.trail.append({"step": state.steps, "tool": call.name, "error": result.content["error"]})
        if not state.done and state.steps >= self.config.max_steps:
            state.done, state.termination_reason = True, "max_steps"
            result.done, result.termination_reason = True, "max_steps"
        return result

    def score(self) -> Score:
        state, question = self._state, self.question
        opened = set(state.opened)
        recall = sum(1 for a in question.support if a in opened) / len(question.support)
        given = state.answer or ""
        em, f1 = (exact_match(given, question.accepted), token_f1(given, question.accepted)) if state.answer is not None else (0.0, 0.0)
        composite = em if self.config.reward == "em" else f1
        details: dict[str, Any] = {
            "answer": state.answer,
            "steps": state.steps,
            "errors": state.errors,
            "hops": question.hops,
            "question_kind": question.kind,
            "evidence_trail": state.trail,
        }
        if state.done:  # the gold answer is sealed until the episode ends
            details.update(gold=question.answer, accepted=list(question.accepted), support=list(question.support))
        components = {"exact_match": em, "f1": f1, "evidence_recall": recall}
        return Score(composite, composite >= self.task.pass_threshold, components, state.termination_reason, details)

    def snapshot(self) -> bytes:
        return json.dumps({"task": self.task.id, "seed": self.seed, "state": asdict(self._state)}, sort_keys=True).encode()

    def restore(self, blob: bytes) -> None:
        try:
            payload = json.loads(blob)
            state = EpisodeState(**payload["state"])
        except (ValueError, TypeError, KeyError) as exc:
            raise EnvError("bad_snapshot", f"not a phantom snapshot: {exc}") from exc
        if payload.get("task") != self.task.id or payload.get("seed") != self.seed:
            raise EnvError(
                "snapshot_mismatch", f"snapshot of {payload.get('task')} seed {payload.get('seed')}, not {self.task.id} seed {self.seed}"
            )
        self._state = state

    def state_hash(self) -> str:
        canonical = json.dumps(
            {"universe": self.universe.spec.seed, "question": self.question.text, "state": asdict(self._state)}, sort_keys=True
        )
        return hashlib.sha256(canonical.encode()).hexdigest()[:32]

    def summary(self) -> str:
        state = self._state
        searched = [t["query"] for t in state.trail if t["tool"] == "search" and "query" in t]
        return (
            f"Question: {self.question.text} | {state.steps}/{self.config.max_steps} calls used | "
            f"opened: {', '.join(state.opened) or 'none'} | searched: {'; '.join(searched) or 'nothing'}"
        )

    # --- tools ---------------------------------------------------------------------------------------------

    def _dispatch(self, call: ToolCall) -> StepResult:
        spec = self.tool(call.name)
        if spec is None:
            return _error("unknown_tool", f"no tool named {call.name!r}; tools are {', '.join(t.name for t in TOOLS)}")
        problem = validate_arguments(spec.parameters, call.arguments)
        if problem:
            return _error("invalid_arguments", problem)
        if call.name == "search":
            return self._search(str(call.arguments["query"]), int(call.arguments.get("k", 5)))
        if call.name == "open_article":
            return self._open(str(call.arguments["article_id"]))
        return self._answer(str(call.arguments["text"]))

    def _search(self, query: str, k: int) -> StepResult:
        if not tokenize(query):
            return _error("empty_query", f"query {query!r} has no words to search for (letters a-z or digits)")
        hits = self.universe.search(query, k)
        results = [{"article_id": a.id, "title": a.title, "snippet": _first_sentence(a.text), "score": score} for a, score in hits]
        self._state.trail.append(
            {"step": self._state.steps, "tool": "search", "query": query, "results": [r["article_id"] for r in results]}
        )
        events = [Event(entity=f"article:{r['article_id']}", field="snippet", op="read") for r in results]
        return StepResult(content={"query": query, "results": results}, events=events)

    def _open(self, article_id: str) -> StepResult:
        article = self.universe.by_id.get(article_id)
        if article is None:
            return _error("unknown_article", f"no article {article_id!r}; ids run a00000-a{len(self.universe.articles) - 1:05d}")
        if article_id not in self._state.opened:
            self._state.opened.append(article_id)
        self._state.trail.append({"step": self._state.steps, "tool": "open_article", "article_id": article_id})
        return StepResult(
            content={"article_id": article.id, "title": article.title, "text": article.text},
            events=[Event(f"article:{article_id}", "text", op="read")],
        )

    def _answer(self, text: str) -> StepResult:
        state = self._state
        state.answer, state.done, state.termination_reason = text, True, "agent_stop"
        state.trail.append({"step": state.steps, "tool": "answer", "text": text})
        composite = self.score().composite
        return StepResult(
            content={"answer": text, "status": "recorded"},
            reward=composite,
            done=True,
            termination_reason="agent_stop",
            events=[Event("episode", "answer", before=None, after=text, op="write")],
        )


def _error(code: str, message: str, *, done: bool = False) -> StepResult:
    return StepResult(content={"error": code, "message": message}, is_error=True, done=done)


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    sentence = text if end < 0 else text[: end + 1]
    return sentence if len(sentence) <= SNIPPET_CHARS else sentence[: SNIPPET_CHARS - 3] + "..."
