"""The GraphCert tools, declared once (OpenAI function schema, MCP tool and browser form come from these)."""

from __future__ import annotations

from environments.core import ToolSpec
from environments.graphcert.graph import OPS
from environments.phantom.world import KINDS, RELATIONS

ENTITY_ID = {"type": "string", "pattern": r"(person|city|country|organisation|work|event):[0-9]{1,6}", "maxLength": 20}
KIND = {"type": "string", "enum": list(KINDS)}
FIELD = {"type": "string", "pattern": r"[a-z_]{1,20}", "maxLength": 20}
MAX_EVIDENCE = 40  # edges one answer may cite: room for the longest proof (10 edges: a constrained 4-hop comparison) and a little to spare

LOOKUP = ToolSpec(
    name="lookup",
    description="Find entities by name or alias (e.g. 'Orsa Vasq', 'Velmora'); ids, kinds and names.",
    parameters={
        "type": "object",
        "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 120}, "kind": KIND},
        "required": ["name"],
        "additionalProperties": False,
    },
    category="read",
)
NODE = ToolSpec(
    name="node",
    description="One entity: its kind, name, aliases and attribute facts as edges ('person:17 birth_year 1843').",
    parameters={"type": "object", "properties": {"id": ENTITY_ID}, "required": ["id"], "additionalProperties": False},
    category="read",
)
NEIGHBOURS = ToolSpec(
    name="neighbours",
    description=(
        "Relation edges at an entity, as 'subject relation object' ('person:17 employer organisation:3'), with the "
        "other end's name. direction: out (the entity is the subject, default), in, or both; relation narrows them."
    ),
    parameters={
        "type": "object",
        "properties": {
            "id": ENTITY_ID,
            "relation": {"type": "string", "enum": sorted({r for _, r in RELATIONS})},
            "direction": {"type": "string", "enum": ["out", "in", "both"]},
        },
        "required": ["id"],
        "additionalProperties": False,
    },
    category="read",
)
RELATIONS_TOOL = ToolSpec(
    name="relations",
    description="The graph's schema: for each kind of entity, its relations (and the kind each leads to) and attributes.",
    parameters={"type": "object", "properties": {}, "additionalProperties": False},
    category="read",
)
PATH = ToolSpec(
    name="path",
    description="A shortest chain of edges between two entities (edges followed either way), up to max_hops (default 4).",
    parameters={
        "type": "object",
        "properties": {"source": ENTITY_ID, "target": ENTITY_ID, "max_hops": {"type": "integer", "minimum": 1, "maximum": 6}},
        "required": ["source", "target"],
        "additionalProperties": False,
    },
    category="read",
)
FILTER = ToolSpec(
    name="filter",
    description=(
        "Entities of one kind whose attributes meet every condition (op eq: equal text; lt/gt: numbers), e.g. "
        "kind person, where [{attribute: occupation, op: eq, value: poet}, {attribute: family, op: eq, value: Vasq}]."
    ),
    parameters={
        "type": "object",
        "properties": {
            "kind": KIND,
            "where": {
                "type": "array",
                "minItems": 1,
                "maxItems": 3,
                "items": {
                    "type": "object",
                    "properties": {
                        "attribute": FIELD,
                        "op": {"type": "string", "enum": list(OPS)},
                        "value": {"type": "string", "minLength": 1, "maxLength": 60},
                    },
                    "required": ["attribute", "op", "value"],
                    "additionalProperties": False,
                },
            },
        },
        "required": ["kind", "where"],
        "additionalProperties": False,
    },
    category="read",
)
ANSWER = ToolSpec(
    name="answer",
    description=(
        "Give the final answer and end the episode: a name, year or number ('Velmora Institute', '1843'), with the "
        "edges that prove it in evidence, copied as tools showed them. Cite the proof only: extra edges cost credit."
    ),
    parameters={
        "type": "object",
        "properties": {
            "text": {"type": "string", "minLength": 1, "maxLength": 200},
            "evidence": {"type": "array", "maxItems": MAX_EVIDENCE, "items": {"type": "string", "minLength": 5, "maxLength": 120}},
        },
        "required": ["text"],
        "additionalProperties": False,
    },
    category="final",
)
TOOLS: tuple[ToolSpec, ...] = (LOOKUP, NODE, NEIGHBOURS, RELATIONS_TOOL, PATH, FILTER, ANSWER)
