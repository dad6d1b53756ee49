"""GraphCertEnv: answer a multi-hop question over a Phantom universe's knowledge graph and cite the proof.

Tools
    lookup(name, kind?)                   entities by name or alias.
    node(id)                              an entity's kind, names and attribute facts (as edges).
    neighbours(id, relation?, direction?) relation edges at an entity, with the other end's name.
    relations()                           the schema: each kind's relations and attributes.
    path(source, target, max_hops?)       a shortest chain of edges between two entities.
    filter(kind, where)                   entities whose attributes meet up to three conditions.
    answer(text, evidence?)               the final answer and the edges cited as its proof; ends the episode.

Rewards
    0 on every step but `answer`, which pays the composite: exact match against the gold answer and its aliases
    (task knob reward="outcome") or the rubric (reward="rubric": half exact match, half the F1 of the cited
    evidence against the question's certificate, rubric.py). Components always report exact_match,
    evidence_precision, evidence_recall, evidence_f1 and rubric, so a trainer may pick either as its reward.

Episode End
    `answer` (agent_stop), or the step budget running out (max_steps, composite 0). Every call counts against
    the budget, errors included.

Arguments
    task.spec holds the knobs (config.GraphCertConfig); the seed picks the universe (seed // seeds_per_universe,
    within the task's split) and the question, which is redrawn until its certificate verifies (certificate.py).

Version History
    1: first version.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from environments.budgeted import AuditedEnv, StepLedger
from environments.core import Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec
from environments.graphcert.certificate import Certificate, certified_question
from environments.graphcert.config import GraphCertConfig
from environments.graphcert.graph import KnowledgeGraph, schema
from environments.graphcert.rubric import canonical, rubric_reward, score_evidence
from environments.graphcert.tools import TOOLS
from environments.phantom.questions import Question
from environments.phantom.scoring import exact_match
from environments.phantom.universe import Universe, UniverseSpec, derive_seed, load_universe

INSTRUCTIONS = (
    "You are answering a question about a fictional world stored as a knowledge graph of {entities} entities. "
    "Nothing you know from outside applies. Find entities with `lookup` or `filter`, read them with `node` and "
    "`neighbours`, and `answer` with a short answer and, in `evidence`, the edges that prove it, copied as the "
    "tools showed them ('person:17 employer organisation:3'). Only edges a tool showed you count, and every edge "
    "beyond the proof costs credit. You have {max_steps} tool calls in all.\n\nQuestion: {question}"
)


@dataclass
class EpisodeState(StepLedger):
    """Everything an episode changes (the budget and evidence trail in StepLedger); the universe and its graph
    are read-only and rebuilt from the seed."""

    shown: dict[str, int] = field(default_factory=dict)  # edge text -> step that first showed it (the audit)
    answer: str | None = None
    evidence: list[str] = field(default_factory=list)


@lru_cache(maxsize=6)
def load_graph(spec: UniverseSpec) -> tuple[Universe, KnowledgeGraph]:
    universe = load_universe(spec)
    return universe, KnowledgeGraph(universe.world)


class GraphCertEnv(AuditedEnv):
    name = "graphcert"
    version = "1"
    _state: EpisodeState

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.config = GraphCertConfig.from_spec(task.spec)
        self.max_calls = self.config.max_steps
        # distractors and aliases shape only the corpus, which this variant never shows: fixed, so the world is
        # the one phantom tasks of the same size and split see
        spec = UniverseSpec(
            split=task.split, index=seed // self.config.seeds_per_universe, articles=self.config.articles, distractors=2, alias_rate=0.5
        )
        self.universe, self.graph = load_graph(spec)
        rng = random.Random(derive_seed("graphcert-question", spec.seed, task.key, seed))
        knobs = {
            "hops": rng.choice(self.config.hops),
            "comparison_rate": self.config.comparison_rate,
            "constraint_rate": self.config.constraint_rate,
        }
        self.question: Question
        self.certificate: Certificate
        self.question, self.certificate = certified_question(self.universe, self.graph, rng, **knobs)
        self._state = EpisodeState()

    # --- the Env contract ---------------------------------------------------------------------------------

    def reset(self) -> Observation:
        self._state = EpisodeState()
        entities = len(self.graph.entities)
        text = INSTRUCTIONS.format(entities=entities, max_steps=self.config.max_steps, question=self.question.text)
        return Observation(text=text, data={"question": self.question.text, "entities": entities, "max_steps": self.config.max_steps})

    def tools(self) -> list[ToolSpec]:
        return list(TOOLS)

    def score(self) -> Score:
        state = self._state
        answered = state.answer is not None
        em = exact_match(state.answer or "", self.question.accepted) if answered else 0.0
        evidence = score_evidence(state.evidence, set(state.shown), self.certificate)
        rubric = rubric_reward(em, evidence) if answered else 0.0
        components = {
            "exact_match": em,
            "evidence_precision": evidence.precision if answered else 0.0,
            "evidence_recall": evidence.recall if answered else 0.0,
            "evidence_f1": evidence.f1 if answered else 0.0,
            "rubric": rubric,
        }
        composite = em if self.config.reward == "outcome" else rubric
        details: dict[str, Any] = {
            "answer": state.answer,
            "evidence": state.evidence,
            "steps": state.steps,
            "errors": state.errors,
            "hops": self.question.hops,
            "question_kind": self.question.kind,
            "evidence_trail": state.trail,
        }
        if state.done:  # the gold answer and its certificate are sealed until the episode ends
            details.update(
                gold=self.question.answer,
                accepted=list(self.question.accepted),
                certificate={"edges": list(self.certificate.edges), "nodes": list(self.certificate.nodes)},
                rubric_items=evidence.items,
                uncredited=evidence.uncredited,
            )
        return Score(composite, composite >= self.task.pass_threshold, components, state.termination_reason, details)

    def _fixed_state(self) -> dict[str, Any]:
        return {"universe": self.universe.spec.seed, "question": self.question.text}

    def summary(self) -> str:
        state = self._state
        return f"Question: {self.question.text} | {state.steps}/{self.config.max_steps} calls used | edges seen: {len(state.shown)}"

    # --- tools ---------------------------------------------------------------------------------------------

    def _run(self, call: ToolCall) -> StepResult:
        args = call.arguments
        for key in ("id", "source", "target"):
            if key in args and args[key] not in self.graph.entities:
                return self._refuse("unknown_entity", f"{key}: no entity {args[key]!r} in this graph; find ids with lookup or filter")
        if call.name == "answer":
            return self._answer(str(args["text"]), [canonical(str(e)) for e in args.get("evidence", [])])
        content = self._read(call.name, args)
        edges = _shown_edges(content)
        for edge in edges:
            self._state.shown.setdefault(edge, self._state.steps)
        self._state.trail.append({"step": self._state.steps, "tool": call.name, "arguments": dict(args), "shown": len(edges)})
        return StepResult(content=content, events=[Event(f"edge:{e}", "edge", op="read") for e in edges])

    def _read(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        graph = self.graph
        if name == "lookup":
            found = graph.lookup(str(args["name"]), args.get("kind"))
            return {
                "name": args["name"],
                "matches": [{"id": i, "kind": graph.entities[i].kind, "name": graph.entities[i].name} for i in found],
            }
        if name == "node":
            entity = graph.entities[args["id"]]
            return {
                "id": entity.id,
                "kind": entity.kind,
                "name": entity.name,
                "aliases": list(entity.aliases),
                "facts": graph.facts(entity.id),
            }
        if name == "neighbours":
            near, total = graph.neighbours(args["id"], args.get("relation"), args.get("direction", "out"))
            return {"id": args["id"], "edges": [{"edge": n.edge, "name": n.name} for n in near], "total": total}
        if name == "relations":
            return {"kinds": schema()}
        if name == "path":
            edges = graph.path(args["source"], args["target"], int(args.get("max_hops", 4)))
            return {"source": args["source"], "target": args["target"], "found": edges is not None, "path": edges or []}
        conditions = [(str(c["attribute"]), str(c["op"]), str(c["value"])) for c in args["where"]]
        found, total = graph.filter(str(args["kind"]), conditions)
        attributes = sorted({c[0] for c in conditions})
        matches = [
            {"id": i, "name": graph.entities[i].name, "facts": [f for f in graph.facts(i) if f.split(" ", 2)[1] in attributes]}
            for i in found
        ]
        return {"kind": args["kind"], "matches": matches, "total": total}

    def _answer(self, text: str, evidence: list[str]) -> StepResult:
        state = self._state
        state.answer, state.evidence = text, evidence
        state.end("agent_stop")
        state.trail.append({"step": state.steps, "tool": "answer", "text": text, "evidence": len(evidence)})
        return StepResult(
            content={"answer": text, "evidence": len(evidence), "status": "recorded"},  # the composite comes as the step's reward
            done=True,
            termination_reason="agent_stop",
            events=[Event("episode", "answer", before=None, after=text, op="write")],
        )


def _shown_edges(content: dict[str, Any]) -> list[str]:
    """Every edge a read result shows: node facts, neighbour edges, a path, the facts filter matched on."""
    edges = [*content.get("facts", []), *content.get("path", []), *(e["edge"] for e in content.get("edges", []))]
    return edges + [fact for match in content.get("matches", []) for fact in match.get("facts", [])]
