"""A Gymnasium wrapper over any registered tool environment (StoreBench by default).

Observations and actions are text: an action is a JSON object {"name": tool, "arguments": {...}}; the
observation is the tool result as ASCII-escaped JSON (Text spaces use a printable charset, since the
default charset is alphanumeric only). Reward is the environment's step reward (the composite on the final
step); `terminated` when the environment ends; `truncated` after `max_steps` actions. `info["status"]` is the
environment's status line (clock, budget), the one free read models and human players share.

    env = ToolEnvGym("storebench/heat-wave")
    obs, info = env.reset(seed=3)
    obs, reward, terminated, truncated, info = env.step('{"name": "get_finance", "arguments": {}}')
"""

from __future__ import annotations

import json
import string
from typing import Any

import gymnasium
from gymnasium import spaces

from environments.core import Env, ToolCall
from environments.registry import make

CHARSET = string.printable


class ToolEnvGym(gymnasium.Env[str, str]):
    metadata = {"render_modes": []}

    def __init__(
        self,
        task_id: str = "storebench/launch-week",
        *,
        max_observation_chars: int = 20_000,
        max_action_chars: int = 4_000,
        max_steps: int | None = None,
    ) -> None:
        self.task_id = task_id
        self.max_observation_chars = max_observation_chars
        self.observation_space = spaces.Text(max_length=max_observation_chars, charset=CHARSET)
        self.action_space = spaces.Text(min_length=1, max_length=max_action_chars, charset=CHARSET)
        self.max_steps = max_steps
        self._env: Env | None = None
        self._steps = 0

    def _text(self, payload: Any) -> str:
        text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), sort_keys=True)
        return text[: self.max_observation_chars]

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        world_seed = seed if seed is not None else int(self.np_random.integers(0, 2**31 - 1))
        self._env = make(self.task_id, seed=world_seed)
        self._steps = 0
        observation = self._env.reset()
        tools = [t.name for t in self._env.tools()]
        return self._text({"observation": observation.text, "data": observation.data, "tools": tools}), {
            "seed": world_seed,
            "tools": [t.openai_schema() for t in self._env.tools()],
            "status": self._env.status_line(),
        }

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if self._env is None:
            raise gymnasium.error.ResetNeeded("call reset() before step()")
        self._steps += 1
        try:
            parsed = json.loads(action)
            if not isinstance(parsed, dict) or not isinstance(parsed.get("name"), str):
                raise ValueError("expected an object with a string 'name'")
            call = ToolCall(name=parsed["name"], arguments=parsed.get("arguments", {}))
        except ValueError as exc:
            content: Any = {"error": f"action is not a JSON tool call: {str(exc)[:200]}"}
            truncated = self.max_steps is not None and self._steps >= self.max_steps
            return self._text(content), 0.0, False, truncated, {"is_error": True, "status": self._env.status_line()}
        result = self._env.step(call)
        terminated = self._env.done
        truncated = not terminated and self.max_steps is not None and self._steps >= self.max_steps
        info = {"is_error": result.is_error, "termination_reason": result.termination_reason, "status": self._env.status_line()}
        return self._text(result.content), float(result.reward), terminated, truncated, info

    def close(self) -> None:
        self._env = None
