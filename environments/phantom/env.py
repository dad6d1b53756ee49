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

import random
from dataclasses import dataclass, field
from typing import Any

from environments.budgeted import AuditedEnv, StepLedger
from environments.core import Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec
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
class EpisodeState(StepLedger):
    """Everything an episode changes (the budget and evidence trail in StepLedger); the universe itself is
    read-only and rebuilt from the seed."""

    opened: list[str] = field(default_factory=list)  # article ids in first-opened order
    answer: str | None = None


class PhantomEnv(AuditedEnv):
    name = "phantom"
    version = "1"
    _state: EpisodeState

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.config = PhantomConfig.from_spec(task.spec)
        self.max_calls = self.config.max_steps
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

    def _fixed_state(self) -> dict[str, Any]:
        return {"universe": self.universe.spec.seed, "question": self.question.text}

    def summary(self) -> str:
        state = self._state
        searched = [t["query"] for t in state.trail if t["tool"] == "search" and "query" in t]
        return (
            f"Question: {self.question.text} | {state.steps}/{self.config.max_steps} calls used | "
            f"opened: {', '.join(state.opened) or 'none'} | searched: {'; '.join(searched) or 'nothing'}"
        )

    # --- tools ---------------------------------------------------------------------------------------------

    def _run(self, call: ToolCall) -> StepResult:
        if call.name == "search":
            return self._search(str(call.arguments["query"]), int(call.arguments.get("k", 5)))
        if call.name == "open_article":
            return self._open(str(call.arguments["article_id"]))
        return self._answer(str(call.arguments["text"]))

    def _search(self, query: str, k: int) -> StepResult:
        if not tokenize(query):
            return self._refuse("empty_query", f"query {query!r} has no words to search for (letters a-z or digits)")
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
            return self._refuse("unknown_article", f"no article {article_id!r}; ids run a00000-a{len(self.universe.articles) - 1:05d}")
        if article_id not in self._state.opened:
            self._state.opened.append(article_id)
        self._state.trail.append({"step": self._state.steps, "tool": "open_article", "article_id": article_id})
        return StepResult(
            content={"article_id": article.id, "title": article.title, "text": article.text},
            events=[Event(f"article:{article_id}", "text", op="read")],
        )

    def _answer(self, text: str) -> StepResult:
        state = self._state
        state.answer = text
        state.end("agent_stop")
        state.trail.append({"step": state.steps, "tool": "answer", "text": text})
        return StepResult(  # the budget's step gives it the composite as its reward
            content={"answer": text, "status": "recorded"},
            done=True,
            termination_reason="agent_stop",
            events=[Event("episode", "answer", before=None, after=text, op="write")],
        )


def _first_sentence(text: str) -> str:
    end = text.find(". ")
    sentence = text if end < 0 else text[: end + 1]
    return sentence if len(sentence) <= SNIPPET_CHARS else sentence[: SNIPPET_CHARS - 3] + "..."
