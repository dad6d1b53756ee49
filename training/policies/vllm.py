"""An in-process vLLM engine as a policy, for GPU workers (the `gpu` extra). vllm is imported only here, lazily,
so CPU installs never need it.

    policy = VLLMPolicy(env=env, seed=0, name="qwen", model="Qwen/Qwen3-8B", sampling={"temperature": 0.7})

Same prompt rendering and parsing as the hf policy (TemplatePolicy): the prompt is passed as token ids, and
each step records the sampled ids with the logprob vLLM reports for each of them.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from training.policies.hf import TemplatePolicy


class VLLMUnavailable(RuntimeError):
    pass


@lru_cache(maxsize=1)
def load_engine(model: str, gpu_memory_utilization: float, max_model_len: int) -> Any:
    """One engine per process: vLLM takes the whole GPU it is given."""
    try:
        import vllm
    except ImportError as exc:
        raise VLLMUnavailable("the vllm policy needs the `gpu` extra (pip install -e '.[gpu]') on a CUDA machine") from exc
    # trust_remote_code=False: a model folder's own Python never runs here (vLLM's default, said out loud)
    return vllm.LLM(model=model, gpu_memory_utilization=gpu_memory_utilization, max_model_len=max_model_len, trust_remote_code=False)


class VLLMPolicy(TemplatePolicy):
    kind = "vllm"

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.engine = load_engine(self.model, float(self.sampling.get("gpu_memory_utilization", 0.85)), self.harness.max_context_tokens)
        self.tokenizer = self.engine.get_tokenizer()

    def generate_ids(self, prompt_ids: list[int], *, seed: int) -> tuple[list[int], list[float]]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = SamplingParams(
            temperature=float(self.sampling.get("temperature", 1.0)),
            top_p=float(self.sampling.get("top_p", 1.0)),
            max_tokens=self.harness.max_new_tokens,
            seed=seed,
            logprobs=0,  # the sampled token's own logprob only
        )
        [output] = self.engine.generate([TokensPrompt(prompt_token_ids=prompt_ids)], params, use_tqdm=False)
        sample = output.outputs[0]
        ids = list(sample.token_ids)
        logprobs = [float(entry[token].logprob) for entry, token in zip(sample.logprobs or [], ids, strict=True)]
        return ids, logprobs
