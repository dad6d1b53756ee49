"""Phantom through the shared adapters: the contract check, the Gymnasium wrapper and the MCP stdio server."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from gymnasium.utils.env_checker import check_env

from environments.contract import check_task
from environments.gym import ToolEnvGym
from environments.registry import make

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("task_id", ["phantom/lookup-dev", "phantom/bridge-test", "phantom/mixed-f1-train"])
def test_phantom_tasks_keep_the_env_contract(task_id: str) -> None:
    assert check_task(task_id, seed=7) == []


def test_the_gymnasium_wrapper_passes_check_env_and_plays_an_episode() -> None:
    gym_env = ToolEnvGym("phantom/lookup-dev", max_steps=10)
    check_env(gym_env, skip_render_check=True)
    observation, info = gym_env.reset(seed=4)
    assert "Question:" in json.loads(observation)["observation"] and info["seed"] == 4
    question = make("phantom/lookup-dev", 4).question
    observation, reward, terminated, truncated, _ = gym_env.step(
        json.dumps({"name": "open_article", "arguments": {"article_id": question.support[0]}})
    )
    assert json.loads(observation)["article_id"] == question.support[0] and reward == 0.0 and not terminated
    _, reward, terminated, truncated, _ = gym_env.step(json.dumps({"name": "answer", "arguments": {"text": question.answer}}))
    assert terminated and not truncated and reward == 1.0
    gym_env.close()


def test_an_mcp_client_plays_a_phantom_episode_over_stdio(tmp_path: Path) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    question = make("phantom/lookup-dev", 2).question
    out = tmp_path / "episode.jsonl"
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "environments", "mcp", "phantom/lookup-dev", "--seed", "2", "--out", str(out)], cwd=str(REPO)
    )

    async def play() -> tuple[list[str], dict, bool, dict]:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = [t.name for t in (await session.list_tools()).tools]
            bad = await session.call_tool("open_article", {"article_id": "nope"})
            found = await session.call_tool("search", {"query": question.text})
            answered = await session.call_tool("answer", {"text": question.answer})
            return tools, found.structured_content, bool(bad.is_error), answered.structured_content

    tools, found, bad_is_error, answered = anyio.run(play)
    assert tools == ["search", "open_article", "answer"] and bad_is_error
    assert found["query"] == question.text and len(found["results"]) == 5
    assert answered == {"answer": question.answer, "status": "recorded"}  # the score is never sent to the client
    record = json.loads(out.read_text().splitlines()[-1])
    assert record["header"]["env"] == "phantom" and record["header"]["termination_reason"] == "agent_stop"
    assert record["header"]["score"]["composite"] == 1.0 and len(record["steps"]) == 4
