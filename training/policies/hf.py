"""A local transformers model as a policy: any `from_pretrained` path, prompted through its chat template.

    policy = HFPolicy(env=env, seed=0, name="tiny", model="/path/to/model", sampling={"temperature": 0.7})

The prompt is `tokenizer.apply_chat_template(messages, tools=...)`; the output is parsed for Hermes/Qwen
`<tool_call>{...}</tool_call>` blocks. Each step records the exact prompt ids, the sampled ids and their
logprobs, so on-policy training never re-tokenizes. Sampling is seeded per step (harness.step_seed): the same
history samples the same completion, which makes a resumed rollout continue exactly as it would have.

Where the decode engine runs the model (training.decode), a policy (one per episode) keeps its episode's KV cache
between turns: the runner calls `act` with the growing history, the new prompt ids extend the cached ones, and only
the new tokens are prefilled (a prompt that does not extend them keeps the shared prefix only). On a CPU with native
bf16 (AVX512-BF16 / AMX) the default dtype is bfloat16.
"""

from __future__ import annotations

import threading
from abc import abstractmethod
from functools import lru_cache
from typing import Any

from training.decode import bf16_supported, engine_for
from training.policies.harness import Completion, LLMPolicy

# One generation at a time per process: torch's global RNG is seeded per step, and two worker threads
# interleaving would make each other's samples irreproducible.
_GENERATE_LOCK = threading.Lock()


class TemplatePolicy(LLMPolicy):
    """A policy whose prompt is rendered by a Hugging Face tokenizer's chat template (hf, vllm)."""

    tokenizer: Any

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[int]:
        text = self.tokenizer.apply_chat_template(messages, tools=tools or None, tokenize=False, add_generation_prompt=True)
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def count_prompt_tokens(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
        return len(self.prompt_ids(messages, tools))

    @abstractmethod
    def generate_ids(self, prompt_ids: list[int], *, seed: int) -> tuple[list[int], list[float]]:
        """Sampled ids (up to and including the end-of-turn token) and their logprobs."""

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, seed: int) -> Completion:
        prompt = self.prompt_ids(messages, tools)
        ids, logprobs = self.generate_ids(prompt, seed=seed)
        text = self.tokenizer.decode(ids, skip_special_tokens=False)
        eos = self.tokenizer.eos_token or ""
        finish = "stop" if eos and text.endswith(eos) else "length"
        text = text.removesuffix(eos) if eos else text
        return Completion(
            text=text,
            token_ids=ids,
            logprobs=logprobs,
            prompt_token_ids=prompt,
            meta={"finish_reason": finish, "prompt_tokens": len(prompt), "completion_tokens": len(ids)},
        )


@lru_cache(maxsize=2)
def load_hf(path: str, device: str, dtype: str) -> tuple[Any, Any]:
    """Model and tokenizer, loaded once per process and path (a worker runs many episodes of one agent)."""
    import torch

    from training.modeling import pretrained

    model, tokenizer = pretrained(path, dtype=getattr(torch, dtype), device=device)
    model.eval()
    return model, tokenizer


def default_device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


class HFPolicy(TemplatePolicy):
    kind = "hf"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        device = str(self.sampling.get("device") or default_device())
        dtype = str(self.sampling.get("dtype") or ("bfloat16" if device.startswith("cuda") or bf16_supported() else "float32"))
        self.model_obj, self.tokenizer = load_hf(self.model, device, dtype)
        self.engine = engine_for(self.model_obj, self.tokenizer) if device == "cpu" else None
        self.session = self.engine.session() if self.engine is not None else None  # this episode's cache
        temperature = float(self.sampling.get("temperature", 1.0))
        if temperature < 0:
            raise ValueError(f"sampling.temperature must be at least 0, got {temperature}")
        self.temperature = temperature

    def generate_ids(self, prompt_ids: list[int], *, seed: int) -> tuple[list[int], list[float]]:
        import torch

        from training.sampling import generate

        with _GENERATE_LOCK:
            torch.manual_seed(seed)
            if self.engine is not None and self.session is not None:
                [(ids, logprobs)] = self.engine.generate(
                    [self.session], [prompt_ids], max_new_tokens=self.harness.max_new_tokens, temperature=self.temperature
                )
                return list(ids), [float(x) for x in logprobs]
            [(ids, logprobs)] = generate(
                self.model_obj, self.tokenizer, [prompt_ids], max_new_tokens=self.harness.max_new_tokens, temperature=self.temperature
            )
        return list(ids), [float(x) for x in logprobs]
