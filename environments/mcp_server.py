"""Serve one episode's tools over stdio with the official MCP SDK, so any MCP client can play it.

    python -m environments mcp storebench/heat-wave --seed 4 --out episode.jsonl

`tools/list` gives every tool with its input schema; `tools/call` runs the call through the same step
recording as the runner and answers with text content, `structuredContent` (the result object) and
`isError`, then the environment's status line (clock, budget) as a second text part when it has one: what the
lab's LLM harness and a human player get for free, an MCP client gets too. Tool failures are results, never
protocol errors. The record (with the sealed score) is written
to --out when the episode ends, or with termination reason "abandoned" when the client leaves early; the
score itself is never sent to the client.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel.server import Server
from mcp.server.stdio import stdio_server

from environments.core import Action, ToolCall
from environments.records import Header, Record
from environments.registry import make
from environments.runner import apply_action, opening_step
from environments.trajectory import new_record


class EpisodeSession:
    """One episode driven by tool calls from outside; records steps as the runner does."""

    def __init__(
        self, task_id: str, seed: int, out: str | None = None, *, options: dict[str, Any] | None = None, version: str | None = None
    ) -> None:
        self.env = make(task_id, seed=seed, options=options, version=version)
        self.out = out
        self.steps = [opening_step(self.env)]
        chain = self.steps[0]["state_hash"]
        assert chain is not None, "opening_step hashes the root of the chain"
        self.chain: str = chain
        self.written = False

    def call(self, name: str, arguments: Any) -> tuple[Any, bool]:
        action = Action(tool_calls=[ToolCall(name=name, arguments=arguments)])
        step, self.chain, failed = apply_action(self.env, action, index=len(self.steps), chain=self.chain)
        self.steps.append(step)
        if self.env.done:
            self.finish()
        result = step["results"][0]
        return result["content"], bool(result["is_error"])

    def record(self) -> Record:
        reason = self.env.termination_reason if self.env.done else "abandoned"
        score = self.env.score()
        header: Header = {
            **self.env.header(),
            "policy": {"name": "mcp-client", "kind": "external"},
            "harness": {"name": "mcp-stdio"},
            "source": "rollout",
        }
        header.update(
            {
                "termination_reason": reason,
                "score": score.to_dict(),
                "reward": score.composite,
                "tools": [t.openai_schema() for t in self.env.tools()],
            }
        )
        return new_record(header=header, steps=self.steps)

    def finish(self) -> None:
        if self.out and not self.written:
            with open(self.out, "a") as handle:
                handle.write(json.dumps(self.record(), separators=(",", ":")) + "\n")
        self.written = True


def build_server(session: EpisodeSession) -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        tools = [types.Tool(name=t.name, description=t.description, input_schema=t.parameters) for t in session.env.tools()]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        content, is_error = session.call(params.name, params.arguments if params.arguments is not None else {})
        structured = content if isinstance(content, dict) else {"result": content}
        parts: list[Any] = [types.TextContent(text=json.dumps(content, ensure_ascii=False))]
        if status := session.env.status_line():
            parts.append(types.TextContent(text=f"Status: {status}"))
        return types.CallToolResult(content=parts, structured_content=structured, is_error=is_error)

    return Server(f"practicum-{session.env.name}", on_list_tools=list_tools, on_call_tool=call_tool)


def serve(task_id: str, seed: int, out: str | None = None, *, options: dict[str, Any] | None = None, version: str | None = None) -> None:
    session = EpisodeSession(task_id, seed, out, options=options, version=version)
    server = build_server(session)

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        session.finish()
