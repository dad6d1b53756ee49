"""The MCP server, driven by the official SDK's real stdio client."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_an_mcp_client_lists_tools_and_plays_an_episode(tmp_path: Path) -> None:
    out = tmp_path / "mcp.jsonl"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "environments", "mcp", "storebench/launch-week", "--seed", "6", "--out", str(out)],
        cwd=str(ROOT),
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    seen: dict = {}

    async def play() -> None:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            listed = await session.list_tools()
            seen["tools"] = {t.name: t.input_schema for t in listed.tools}
            ok = await session.call_tool("get_finance", {})
            seen["finance"] = (ok.is_error, ok.structured_content, json.loads(ok.content[0].text))
            seen["status"] = [part.text for part in ok.content[1:]]
            bad = await session.call_tool("set_price", {"sku": "P01", "price": "free"})
            seen["bad"] = (bad.is_error, bad.structured_content)
            for _ in range(30):
                last = await session.call_tool("end_window", {})
            seen["last"] = last.structured_content
            after = await session.call_tool("get_finance", {})
            seen["after"] = (after.is_error, after.structured_content)

    anyio.run(play)
    assert len(seen["tools"]) == 29 and seen["tools"]["set_price"]["required"] == ["sku", "price"]
    is_error, structured, text = seen["finance"]
    assert not is_error and structured["cash"] == 25000 and text == structured
    assert seen["status"] == ["Status: Day 0 of 30 · 09:05 · 39 of 40 operations left · 535 minutes left in this window"]
    assert seen["bad"][0] and "arguments.price: expected a number" in seen["bad"][1]["error"]
    assert seen["last"]["day"] == 30 and "composite" not in json.dumps(seen["last"])
    assert seen["after"][0] and "episode is over" in seen["after"][1]["error"]
    record = json.loads(out.read_text().splitlines()[0])
    assert (
        record["header"]["termination_reason"] == "horizon_reached" and len(record["steps"]) == 33
    )  # opening + 2 calls + 30 windows; the call after the end is not part of the episode
    assert record["header"]["policy"] == {"name": "mcp-client", "kind": "external"}
