"""Scripted anchors for GraphCert: oracle > graphwalk > flood (the hack) > random.

- oracle: privileged; shows each certificate edge with the one call that shows it (node for a fact, neighbours
  along the relation for an edge), then answers the gold answer citing exactly the certificate.
- graphwalk: no privileged access. It parses the question with phantom's reader (reading.parse_question: the
  public phrasings), finds the anchor (lookup by name, or filter by occupation and surname), follows each named
  relation with neighbours, reads the asked attribute with node, compares when asked, and cites the edges it
  walked. The graph makes every hop one call, so it is the graph-reading counterpart of phantom's multisearch.
- flood: graphwalk's walk and answer, citing every edge any tool showed it: the reward hack the rubric's
  precision is there to defeat (its rubric score sits well below graphwalk's; its exact match equals it).
- random: valid calls at random (lookup of question words, neighbours and node of ids it has seen) and a random
  seen name with random seen edges as its answer. Also registered as `random-valid` for the contract check.

Each is a pure function of (seed, history): scripts are generators replayed over the history's results.
"""

from __future__ import annotations

import json
import random
import re
from abc import abstractmethod
from collections.abc import Callable, Generator
from typing import Any

from environments.core import Action, Env, Policy, ToolCall, ToolSpec
from environments.graphcert.env import GraphCertEnv
from environments.graphcert.graph import split_edge
from environments.graphcert.tools import MAX_EVIDENCE
from environments.phantom.reading import Description, parse_question
from environments.phantom.universe import derive_seed
from environments.records import Step

Call = tuple[str, dict[str, Any]]
Script = Generator[Call, "dict[str, Any] | None", None]


def _results(history: list[Step]) -> list[dict[str, Any] | None]:
    """Each agent step's first result as a dict; None for an error."""
    out: list[dict[str, Any] | None] = []
    for step in (s for s in history if s.get("source") == "agent"):
        results = step.get("results") or []
        content = results[0].get("content") if results and not results[0].get("is_error") else None
        if isinstance(content, str):
            try:
                content = json.loads(content)
            except ValueError:
                content = None
        out.append(content if isinstance(content, dict) and "error" not in content else None)
    return out


class _OutOfCalls(Exception):
    pass


class ScriptPolicy(Policy):
    """A policy written as a generator that yields calls and receives their results; `answer` is yielded last."""

    def __init__(self, max_steps: int) -> None:
        self.max_steps = max_steps
        self.guess, self.used = "", 0
        self.cited: list[str] = []

    @abstractmethod
    def script(self) -> Script:
        """The calls to make, as a generator receiving each call's result (None for an error)."""

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        results = _results(history)
        self.guess, self.cited, self.used = "", [], 0
        script = self.script()
        try:
            call = next(script)
            for result in results:
                call = script.send(result)
        except (StopIteration, _OutOfCalls):
            call = ("answer", {"text": self.guess or "unknown", "evidence": self.cited})
        return Action(tool_calls=[ToolCall(name=call[0], arguments=call[1], id=f"call_{len(results)}")])

    def tool(self, tool_name: str, /, **arguments: Any) -> Generator[Call, dict[str, Any] | None, dict[str, Any] | None]:
        if self.used >= self.max_steps - 1:  # the last call is the answer's
            raise _OutOfCalls
        self.used += 1
        return (yield (tool_name, arguments))


class OraclePolicy(ScriptPolicy):
    name = "oracle"

    def __init__(self, env: GraphCertEnv) -> None:
        super().__init__(env.config.max_steps)
        self.env = env

    def script(self) -> Script:
        calls: dict[str, tuple[str, dict[str, Any]]] = {}
        for edge in self.env.certificate.edges:
            subject, field, _ = split_edge(edge) or ("", "", "")
            if field in self.env.graph.entities[subject].rels:
                calls.setdefault(f"n{subject}{field}", ("neighbours", {"id": subject, "relation": field}))
            else:
                calls.setdefault(f"f{subject}", ("node", {"id": subject}))
        try:
            for tool_name, arguments in calls.values():
                yield from self.tool(tool_name, **arguments)
        except _OutOfCalls:
            pass
        yield ("answer", {"text": self.env.question.answer, "evidence": list(self.env.certificate.edges)})


class GraphWalkPolicy(ScriptPolicy):
    name = "graphwalk"

    def __init__(self, question: str, max_steps: int, *, cite_everything: bool = False) -> None:
        super().__init__(max_steps)
        self.question, self.cite_everything = question, cite_everything
        self.seen: list[str] = []

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        self.seen = []
        action = super().act(history, tools)
        call = action.tool_calls[0]
        if call.name == "answer" and self.cite_everything:
            flood = list(dict.fromkeys(self.seen))[:MAX_EVIDENCE]
            action = Action(tool_calls=[ToolCall("answer", {**call.arguments, "evidence": flood}, call.id)])
        return action

    def tool(self, tool_name: str, /, **arguments: Any) -> Generator[Call, dict[str, Any] | None, dict[str, Any] | None]:
        result = yield from super().tool(tool_name, **arguments)
        if result is not None:
            self.seen += [*result.get("facts", []), *(e["edge"] for e in result.get("edges", []))]
            self.seen += [f for m in result.get("matches", []) for f in m.get("facts", [])]
        return result

    def script(self) -> Script:
        plan = parse_question(self.question)
        if plan is None:
            return
        ends = []
        for side in plan.sides:
            end = yield from self._follow(side)
            if end is None:
                return
            ends.append(end)
        if plan.ask == "entity":
            assert plan.final is not None
            edge = yield from self._relation(ends[0], plan.final[1])
            if edge is not None:
                self.guess = edge["name"]
            return
        values = []
        for end in ends:
            kinds = [a for k, a in plan.attribute if k == end.split(":")[0]]
            node = yield from self.tool("node", id=end)
            fact = next((f for f in (node or {}).get("facts", []) if kinds and f.split(" ", 2)[1] == kinds[0]), None)
            if fact is None:
                return
            self.cited.append(fact)
            values.append((fact.split(" ", 2)[2], (node or {}).get("name", "")))
        if plan.ask == "attribute":
            self.guess = values[0][0]
        elif all(v.isdigit() for v, _ in values) and values[0][0] != values[1][0]:
            first_smaller = int(values[0][0]) < int(values[1][0])
            self.guess = values[0][1] if first_smaller == plan.smaller_wins else values[1][1]

    def _follow(self, side: Description) -> Generator[Call, dict[str, Any] | None, str | None]:
        anchor = side.anchor
        if anchor.occupation:
            where = [
                {"attribute": "occupation", "op": "eq", "value": anchor.occupation},
                {"attribute": "family", "op": "eq", "value": anchor.text},
            ]
            found = yield from self.tool("filter", kind="person", where=where)
            matches = (found or {}).get("matches", [])
            if len(matches) != 1:
                return None
            self.cited += matches[0]["facts"]
            current = str(matches[0]["id"])
        else:
            kinds = side.kinds() if not side.relations else (side.relations[0][0],)
            arguments = {"name": anchor.text, **({"kind": kinds[0]} if len(kinds) == 1 else {})}
            found = yield from self.tool("lookup", **arguments)
            matches = (found or {}).get("matches", [])
            if not matches:
                return None
            current = str(matches[0]["id"])
        for _, relation in side.relations:
            edge = yield from self._relation(current, relation)
            if edge is None:
                return None
            current = edge["edge"].split(" ", 2)[2]
        return current

    def _relation(self, entity: str, relation: str) -> Generator[Call, dict[str, Any] | None, dict[str, Any] | None]:
        if self.cite_everything:  # the flood looks at every edge around the entity, to have more to cite
            result = yield from self.tool("neighbours", id=entity, direction="both")
        else:
            result = yield from self.tool("neighbours", id=entity, relation=relation)
        edges = [e for e in (result or {}).get("edges", []) if e["edge"].startswith(f"{entity} {relation} ")]
        if not edges:
            return None
        self.cited.append(edges[0]["edge"])
        return dict(edges[0])


class RandomPolicy(Policy):
    name = "random"

    def __init__(self, question: str, seed: int) -> None:
        self.words = re.findall(r"[A-Z][a-z]+", question) or ["Velmora"]
        self.seed = seed
        self.patience = random.Random(derive_seed("graphcert-random-anchor", seed)).randint(1, 6)

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        results = [r for r in _results(history) if r is not None]
        done = len([s for s in history if s.get("source") == "agent"])
        rng = random.Random(derive_seed("graphcert-random-anchor", self.seed, done))
        ids = [str(m["id"]) for r in results for m in r.get("matches", [])]
        ids += [e["edge"].split(" ", 2)[2] for r in results for e in r.get("edges", [])]
        ids = [i for i in ids if ":" in i]
        edges = [e["edge"] for r in results for e in r.get("edges", [])] + [f for r in results for f in r.get("facts", [])]
        if done >= self.patience:
            names = [str(m["name"]) for r in results for m in r.get("matches", [])] + [
                e["name"] for r in results for e in r.get("edges", [])
            ]
            cited = rng.sample(edges, min(len(edges), rng.randint(0, 4)))
            call = ToolCall("answer", {"text": rng.choice(names) if names else rng.choice(self.words), "evidence": cited}, f"call_{done}")
        elif ids and rng.random() < 0.6:
            call = ToolCall(rng.choice(("neighbours", "node")), {"id": rng.choice(ids)}, f"call_{done}")
        else:
            call = ToolCall("lookup", {"name": rng.choice(self.words)}, f"call_{done}")
        return Action(tool_calls=[call])


def graphcert_anchor(name: str, env: GraphCertEnv, seed: int) -> Policy:
    if name == "oracle":
        return OraclePolicy(env)
    if name == "graphwalk":
        return GraphWalkPolicy(env.question.text, env.config.max_steps)
    if name == "flood":
        return GraphWalkPolicy(env.question.text, env.config.max_steps, cite_everything=True)
    if name == "random":
        return RandomPolicy(env.question.text, seed)
    raise KeyError(f"no graphcert anchor {name!r}; anchors are {', '.join(ANCHOR_NAMES)}")


def anchor_factory(name: str) -> Callable[[Env, int], Policy]:
    def make(env: Env, seed: int) -> Policy:
        assert isinstance(env, GraphCertEnv), f"the graphcert {name} anchor needs a GraphCertEnv, got {type(env).__name__}"
        return graphcert_anchor(name, env, seed)

    return make


ANCHOR_NAMES: tuple[str, ...] = ("oracle", "graphwalk", "flood", "random")
