"""Any OpenAI-compatible chat-completions endpoint as a policy (a vLLM or SGLang server, hosted APIs).

    connection = Connection(base_url="https://api.openai.com/v1", api_key=key)
    policy = OpenAIPolicy(env=env, seed=0, name="gpt", model="gpt-4.1-mini", connection=connection,
                          sampling={"temperature": 0.2, "timeout_s": 60, "max_retries": 4})

Native tool calling (`tools=`, `tool_calls` in the answer); a server that returns the calls as text instead is
parsed like a local model's output. Timeouts, retries with exponential backoff and rate limits (429 with
Retry-After) are handled by the `openai` client itself; when they are exhausted the policy raises
HarnessStop("infrastructure_error"), which ends the episode as something to re-run, not an agent failure.

The caller hands over the base URL and the key in a `Connection` (training/policies/netguard.py); this module
reads no environment variable and no key from the agent's config. Requests go through the connection's guarded
client: one origin, and no private address unless the connection allows it, checked at connect time. The key
never goes into `describe()`, any step or any error message.
"""

from __future__ import annotations

import json
from typing import Any

import openai

from environments.core import ToolCall
from training.policies.harness import Completion, HarnessStop, LLMPolicy
from training.policies.netguard import Connection, guarded_client

_PASSED_THROUGH = ("temperature", "top_p", "presence_penalty", "frequency_penalty", "stop")


class OpenAIPolicy(LLMPolicy):
    kind = "openai"

    def __init__(self, *, connection: Connection, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.endpoint = connection.base_url
        self.endpoint_name = connection.name
        timeout = float(self.sampling.get("timeout_s", 60.0))
        retries = int(self.sampling.get("max_retries", 4))
        self.client = openai.OpenAI(
            base_url=connection.base_url,
            api_key=connection.api_key or "EMPTY",  # local servers accept any key
            timeout=timeout,
            # A pool of servers retries in its transport, on another server (training/policies/pool.py); not twice.
            max_retries=0 if connection.pooled else retries,
            # openai types this as httpx2.Client but accepts an httpx.Client too (it checks both); the guard is built on httpx.
            http_client=guarded_client(connection, timeout=timeout, attempts=retries + 1),  # type: ignore[arg-type]
        )

    def describe(self) -> dict[str, Any]:
        named = {"endpoint_name": self.endpoint_name} if self.endpoint_name else {}
        return {**super().describe(), "endpoint": self.endpoint, **named}

    def count_prompt_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        # No tokenizer on this side of the wire: ~4 characters a token is the usual estimate for English and JSON.
        chars = sum(len(json.dumps(m, ensure_ascii=False)) for m in messages) + len(json.dumps(tools))
        return chars // 4 + 1

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int) -> Completion:
        options: dict[str, Any] = {k: self.sampling[k] for k in _PASSED_THROUGH if k in self.sampling}
        if self.sampling.get("logprobs", True):
            options["logprobs"] = True
        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                tools=tools or openai.omit,
                max_tokens=self.harness.max_new_tokens,  # type: ignore[arg-type]
                seed=seed,
                **options,
            )
        except (openai.APITimeoutError, openai.APIConnectionError, openai.RateLimitError, openai.InternalServerError) as exc:
            # The cause names the refused address or the socket error; neither the client nor httpx puts the key in it.
            cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
            raise HarnessStop("infrastructure_error", f"{type(exc).__name__} from {self.endpoint} after retries: {exc}{cause}") from exc
        choice = response.choices[0]
        message = choice.message
        meta: dict[str, Any] = {"finish_reason": choice.finish_reason, "response_model": response.model}
        if response.usage is not None:
            meta["usage"] = {"prompt_tokens": response.usage.prompt_tokens, "completion_tokens": response.usage.completion_tokens}
        token_ids, logprobs = _token_logprobs(choice)
        reasoning = getattr(message, "reasoning_content", None)
        completion = Completion(text=message.content or "", reasoning=reasoning, token_ids=token_ids, logprobs=logprobs, meta=meta)
        if message.tool_calls:
            completion.tool_calls, completion.error = _native_calls(message.tool_calls)
        return completion


def _native_calls(raw_calls: Any) -> tuple[list[ToolCall], str | None]:
    calls: list[ToolCall] = []
    errors: list[str] = []
    for raw in raw_calls:
        function = raw.function
        try:
            arguments = json.loads(function.arguments) if function.arguments and function.arguments.strip() else {}
        except json.JSONDecodeError as exc:
            errors.append(f"arguments of {function.name!r} are not valid JSON ({exc.msg} at character {exc.pos})")
            continue
        if not isinstance(arguments, dict):
            errors.append(f"arguments of {function.name!r} must be a JSON object")
            continue
        calls.append(ToolCall(name=function.name, arguments=arguments, id=raw.id))
    return calls, "; ".join(errors) or None


def _token_logprobs(choice: Any) -> tuple[list[int] | None, list[float] | None]:
    """Logprobs of the sampled tokens when the server sent them; token ids too when it names them as
    `token_id:<n>` (vLLM's `return_tokens_as_token_ids`)."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None, None
    logprobs = [float(entry.logprob) for entry in content]
    tokens = [entry.token for entry in content]
    if all(isinstance(t, str) and t.startswith("token_id:") for t in tokens):
        return [int(t.split(":", 1)[1]) for t in tokens], logprobs
    return None, logprobs
