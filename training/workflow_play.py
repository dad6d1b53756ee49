"""Workflow episodes played by a local model in several roles, with role-conditioned prompts (FloWright's sampler).

    finder = ModelRole(model, tokenizer, role="finder", style=style, max_new_tokens=48, temperature=1.0)
    records = play_relays(jobs, players={"finder": finder, "reporter": reporter}, generator=None, tasks=..., stages=2)

One model can play every role: a role is a prompt, not a network. Each turn renders the role's view of the history
so far, samples one completion and records the exact prompt ids, sampled ids and logprobs on the role's step, so a
role is trained on exactly what it saw and wrote (training/role_views.py reads those ids, never re-tokenizing).

The views:
- a team role (finder, reporter, ...): the system prompt names the role and the environment's task (and, in the
  compact style, lists the tools); then the opening observation; then every later step: the plan's instruction
  steps as user messages ("[finder] Stage 1 of 2: ..."), every team member's tool work as assistant turns with
  their tool results (the form the base learnt its tool use in; who acted is in the instructions before). The
  generator's own step is not shown: its plan reaches the team as the instructions.
- the generator: the system prompt gives the workflow format and the team's roles; the user turn is the opening
  observation. Its answer is the plan (JSON), run by environments.workflow.run_workflow.

Episodes run one after the other and each turn is one generate call (no batching across episodes): plain and
exact, and fast enough for toolgym relays on a CPU; a served model (vLLM) is the way to scale it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from environments.core import Action, Policy, ToolSpec
from environments.records import Step
from environments.relay import RELAY_ROLES, RelayEnv, relay_env, relay_plan
from environments.roles import step_role
from environments.workflow import GENERATOR, WORKFLOW_FORMAT, ScriptedGenerator, run_workflow
from training.data import PromptStyle, cut_text, encode_text, render_chat
from training.sampling import generate
from training.toolcall_parse import parse_tool_calls

GENERATOR_BRIEF = (
    "You are the generator of a team. Write the plan the team follows, as JSON in the format "
    f'{{"format": "{WORKFLOW_FORMAT}", "nodes": [{{"id": "s1", "role": ROLE, "instruction": TEXT, "depends_on": [IDS], '
    '"max_steps": N}}]}}. Nodes run in dependency order; a node whose dependency did not finish is skipped.'
)


def _text(content: Any) -> str:
    return content if isinstance(content, str) else json.dumps(content, ensure_ascii=False)


def team_messages(
    history: list[Step], *, role: str, env_name: str, description: str, tools: list[dict[str, Any]], style: PromptStyle
) -> list[dict[str, Any]]:
    """A team role's view before its turn (module docstring)."""
    brief = f"You are the {role} of a team in {env_name}. {description} Do your own instruction only, through tool calls."
    messages: list[dict[str, Any]] = [{"role": "system", "content": style.system(brief, tools)}]
    for step in history:
        meta = step.get("meta") or {}
        if step.get("source") == "env" or meta.get("instruction"):
            messages.append({"role": "user", "content": step.get("message") or ""})
        elif step_role(step) == GENERATOR or step.get("source") != "agent":
            continue
        elif meta.get("invalid_action"):
            messages.append({"role": "assistant", "content": str(meta.get("raw_output", step.get("message") or ""))})
            messages.append({"role": "user", "content": f"Error: {meta['invalid_action']}"})
        else:
            calls = [
                {"type": "function", "id": c["id"], "function": {"name": c["name"], "arguments": c.get("arguments") or {}}}
                for c in step.get("tool_calls") or []
            ]
            messages.append({"role": "assistant", "content": step.get("message") or "", "tool_calls": calls})
            for result in step.get("results") or []:
                messages.append({"role": "tool", "content": cut_text(_text(result.get("content")), style.max_result_chars)})
    return messages


def generator_messages(history: list[Step], *, roles: Sequence[str], description: str) -> list[dict[str, Any]]:
    """The generator's view: the workflow format, the team's roles, the task and its opening observation."""
    system = f"{GENERATOR_BRIEF} Roles: {', '.join(roles)}. Task: {description}"
    return [{"role": "system", "content": system}, {"role": "user", "content": history[0].get("message") or ""}]


class ModelRole(Policy):
    """One role played by an in-process model: renders the role's view, samples, records the ids (module docstring).

    `roles` is only the generator's business (the team it plans for). A completion that holds no valid tool call is an
    invalid action (Action.error), which fails the node; a prompt past `max_prompt_tokens` raises, which fails it too."""

    kind = "hf"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        role: str,
        env_name: str,
        description: str,
        style: PromptStyle,
        max_new_tokens: int,
        temperature: float,
        max_prompt_tokens: int = 4096,
        roles: Sequence[str] = RELAY_ROLES,
    ) -> None:
        self.model, self.tokenizer, self.role, self.style = model, tokenizer, role, style
        self.env_name, self.description, self.roles = env_name, description, tuple(roles)
        self.max_new_tokens, self.temperature, self.max_prompt_tokens = max_new_tokens, temperature, max_prompt_tokens
        self.name = f"model-{role}"

    def describe(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "role": self.role, "temperature": self.temperature}

    def prompt_ids(self, history: list[Step], tools: list[ToolSpec]) -> list[int]:
        if self.role == GENERATOR:
            messages, template_tools = generator_messages(history, roles=self.roles, description=self.description), None
        else:
            schemas = [t.openai_schema() for t in tools]
            messages = team_messages(
                history, role=self.role, env_name=self.env_name, description=self.description, tools=schemas, style=self.style
            )
            template_tools = self.style.template_tools(schemas)
        return encode_text(self.tokenizer, render_chat(self.tokenizer, messages, template_tools, generation_prompt=True))

    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action:
        prompt = self.prompt_ids(history, tools)
        if len(prompt) > self.max_prompt_tokens:
            raise ValueError(f"the {self.role}'s prompt needs {len(prompt)} tokens; max_prompt_tokens is {self.max_prompt_tokens}")
        [(ids, logprobs)] = generate(self.model, self.tokenizer, [prompt], max_new_tokens=self.max_new_tokens, temperature=self.temperature)
        tokens: dict[str, Any] = {"token_ids": list(ids), "logprobs": [float(x) for x in logprobs], "prompt_token_ids": prompt}
        text = self.tokenizer.decode(ids, skip_special_tokens=False).removesuffix(self.tokenizer.eos_token)
        if self.role == GENERATOR:
            return Action(message=text.strip(), **tokens)  # run_workflow validates the plan
        parsed = parse_tool_calls(text, id_prefix=f"call_{len(history)}_")
        error = parsed.error or (None if parsed.tool_calls else "no tool call found; act by calling one of the tools")
        if error is not None:
            return Action(message=parsed.message or None, error=error, meta={"raw_output": text}, **tokens)
        return Action(tool_calls=parsed.tool_calls, message=parsed.message or None, **tokens)


def play_relays(
    jobs: Sequence[int], *, players: Mapping[str, Policy], generator: Policy | None, tasks: Sequence[str], stages: int
) -> list[dict[str, Any]]:
    """One workflow record per relay seed in `jobs`; `generator` None plays the relay's reference plan (relay_plan).
    Sampling draws on torch's global generator: seed it before for a reproducible batch."""
    records = []
    for seed in jobs:
        env: RelayEnv = relay_env(tasks, seed, stages=stages)
        plan_writer = generator if generator is not None else ScriptedGenerator(relay_plan(env))
        with torch.no_grad():
            records.append(run_workflow(env, plan_writer, dict(players)))
    return records
