"""Pretraining text from the environments' TRAINING data only: never held-out seeds, dev or test splits.

    corpus = build_corpus(spec)          # Corpus(documents=[...], sources={"toolgym": {"tasks": [...], "seeds": [...]}, ...})

Sources: tool schemas (JSON and the compact one-line listing), scripted episodes on training seeds rendered
through the chat template in the spec's prompt style (so the markup and the compact prompts are learnt),
Phantom articles of train universes, and the service desk's policy document. Each source stops at
`spec.corpus_chars` characters; the documents are shuffled with the spec's seed, so the corpus is a function
of the spec.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from environments.core import ToolCall
from environments.policies import make_policy
from environments.registry import list_tasks, make
from training.data import compact_tool_listing, record_messages, render_chat
from training.scripted import scripted_episode
from training.zoo.specs import ZooSpec

HELD_OUT_SEED = 100_000  # evaluation seeds start here (toolgym) and no corpus or SFT seed may reach it
CORPUS_SEEDS = 10_000  # corpus episodes use training seeds from here on; SFT demonstrations use 0, 1, ...


@dataclass
class Corpus:
    documents: list[str]
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)  # source -> tasks, seeds, chars (what was read)

    @property
    def chars(self) -> int:
        return sum(len(d) for d in self.documents)


def training_task_ids(env: str) -> list[str]:
    """The environment's train-split task ids, from the registry (a task added there joins automatically)."""
    return [t.id for t in list_tasks(env) if t.split == "train"]


def toolgym_sft_tasks() -> list[str]:
    """Toolgym training tasks worth demonstrating: all but `guess`, whose answer is a constant."""
    return [task for task in training_task_ids("toolgym") if task != "toolgym/guess"]


def demo_policy(task_id: str, seed: int) -> Any:
    """The scripted demonstrator for a training task: toolgym's expert, Phantom's oracle, StoreBench's smart triage."""
    if task_id.startswith("toolgym/"):
        from environments.toolgym.anchors import ExpertPolicy

        return ExpertPolicy()
    anchor = {"phantom": "oracle", "storebench": "smart-triage"}[task_id.split("/")[0]]
    return make_policy(anchor, make(task_id, seed), seed)


def _renderer() -> Any:
    """A throwaway tokenizer whose only use is rendering the chat template (the real one is trained on this corpus)."""
    from training.tiny import build_tokenizer

    return build_tokenizer(300)


def _episodes(tasks: list[str], seeds: range, spec: ZooSpec, max_turns: int, renderer: Any) -> Iterator[tuple[str, int, str]]:
    for seed in seeds:
        for task in tasks:
            record = scripted_episode(demo_policy(task, seed), task, seed, max_turns=max_turns)
            tools = spec.prompt_style.template_tools(record["header"]["tools"])
            yield task, seed, render_chat(renderer, record_messages(record, style=spec.prompt_style), tools)


def _collect(budget: int, items: Iterator[tuple[str, int, str]], log: dict[str, Any]) -> list[str]:
    documents: list[str] = []
    used = 0
    for task, seed, text in items:
        if used >= budget:
            break
        documents.append(text)
        used += len(text)
        log.setdefault("tasks", set()).add(task)
        log.setdefault("seeds", set()).add(seed)
    log["chars"] = used
    return documents


def _schemas(tasks: list[str]) -> Iterator[tuple[str, int, str]]:
    for task in tasks:
        schemas = [t.openai_schema() for t in make(task, 0).tools()]
        yield task, 0, "\n".join(json.dumps(s) for s in schemas)
        yield task, 0, compact_tool_listing(schemas)


def _articles(levels: tuple[str, ...]) -> Iterator[tuple[str, int, str]]:
    seen: set[str] = set()
    for index in range(100):  # train universes in turn, until the budget stops the caller
        for level in levels:
            task = f"phantom/{level}-train"
            first: Any = make(task, 0)
            seed = index * first.config.seeds_per_universe  # the first seed of the index-th train universe
            env: Any = make(task, seed)
            for article in env.universe.articles:
                key = f"{env.universe.spec.seed}/{article.id}"
                if key not in seen:
                    seen.add(key)
                    yield task, seed, f"{article.title}\n{article.text}"


def _policies() -> Iterator[tuple[str, int, str]]:
    for task in training_task_ids("servicedesk")[:1]:
        outcome = make(task, 0).step(ToolCall("read_policy", {}, "p0"))
        content = outcome.content
        yield task, 0, content["policy"] if isinstance(content, dict) else str(content)


def build_corpus(spec: ZooSpec) -> Corpus:
    """The pretraining documents for `spec` (see the module docstring); every seed used is below HELD_OUT_SEED."""
    renderer = _renderer()
    budget = spec.corpus_chars
    seeds = range(CORPUS_SEEDS, 2 * CORPUS_SEEDS)  # disjoint from SFT demonstrations (seeds from 0) and held-out seeds
    phantom = [f"phantom/{level}-train" for level in spec.phantom_levels]
    storebench = training_task_ids("storebench")
    sources: dict[str, Callable[[], Iterator[tuple[str, int, str]]]] = {
        "schemas": lambda: _schemas(toolgym_sft_tasks() + phantom + storebench + training_task_ids("servicedesk")[:1]),
        "toolgym": lambda: _episodes(toolgym_sft_tasks(), seeds, spec, 4, renderer),
        "phantom": lambda: _episodes(phantom, seeds, spec, 12, renderer),
        "phantom_articles": lambda: _articles(spec.phantom_levels),
        "storebench": lambda: _episodes(storebench, seeds, spec, spec.storebench_turns, renderer),
        "policies": _policies,
    }
    documents: list[str] = []
    log: dict[str, dict[str, Any]] = {}
    for name, items in sources.items():
        log[name] = {}
        documents += _collect(budget, items(), log[name])
        log[name] = {k: sorted(v) if isinstance(v, set) else v for k, v in log[name].items()}
    assert all(s < HELD_OUT_SEED for entry in log.values() for s in entry.get("seeds", [])), "a held-out seed reached the corpus"
    random.Random(spec.seed).shuffle(documents)
    return Corpus(documents, log)
