"""Play an environment over MCP as an outside client would: `python -m environments mcp TASK --seed N` on stdio.

tools, results = mcp_calls("workdesk/support-lead", 1000, [("calc", {"program": "1 + 1"})])
results[0].structured_content, results[0].is_error, results[0].content[0].text
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]


def mcp_calls(task: str, seed: int, calls: Sequence[tuple[str, dict[str, Any]]]) -> tuple[set[str], list[Any]]:
    """The tool names the server lists and each call's CallToolResult, in order, from one session."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "environments", "mcp", task, "--seed", str(seed)],
        cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    seen: dict[str, Any] = {}

    async def play() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            seen["tools"] = {t.name for t in (await session.list_tools()).tools}
            seen["results"] = [await session.call_tool(name, arguments) for name, arguments in calls]

    anyio.run(play)
    return seen["tools"], seen["results"]
