"""The three phantom tools, declared once (OpenAI function schema, MCP tool and browser form come from these)."""

from __future__ import annotations

from environments.core import ToolSpec

ARTICLE_ID_PATTERN = r"a[0-9]{5}"
MAX_RESULTS = 10

SEARCH = ToolSpec(
    name="search",
    description=(
        "Search the corpus of articles (BM25 ranking). Returns up to k results, best first, each with its "
        "article_id, title and first sentence. Use distinctive names rather than whole questions."
    ),
    parameters={
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "maxLength": 300, "description": "words to look for"},
            "k": {"type": "integer", "minimum": 1, "maximum": MAX_RESULTS, "description": "how many results (default 5)"},
        },
        "required": ["query"],
        "additionalProperties": False,
    },
    category="read",
)
OPEN_ARTICLE = ToolSpec(
    name="open_article",
    description="Read one article in full, by the article_id a search returned (e.g. a00042).",
    parameters={
        "type": "object",
        "properties": {"article_id": {"type": "string", "pattern": ARTICLE_ID_PATTERN, "maxLength": 6}},
        "required": ["article_id"],
        "additionalProperties": False,
    },
    category="read",
)
ANSWER = ToolSpec(
    name="answer",
    description=(
        "Give the final answer and end the episode: a name, a year or a number, as short as possible "
        "(e.g. 'Velmora Institute', '1843', '41200'). Only the first answer counts."
    ),
    parameters={
        "type": "object",
        "properties": {"text": {"type": "string", "minLength": 1, "maxLength": 200}},
        "required": ["text"],
        "additionalProperties": False,
    },
    category="final",
)
TOOLS: tuple[ToolSpec, ...] = (SEARCH, OPEN_ARTICLE, ANSWER)
