"""The CPU generation engine: a KV cache per episode kept across turns, forked group prefixes, continuous batching.

    engine = DecodeEngine(model, eos_id=tokenizer.eos_token_id, token_budget=32_768)
    session = engine.session()                                   # one episode's cache
    engine.submit(session, prompt_ids, max_new_tokens=64, temperature=1.0, tag=episode)
    while engine.busy():
        for done in engine.step():                               # done.tag, done.ids, done.logprobs
            ...                                                  # the environment answers; submit the next turn

Why: decoding a 135M model on a CPU reads every weight once per step, so memory bandwidth bounds one sequence
and stepping many sequences together is where the factor lies. The engine runs the model's own modules (so a
peft LoRA wrapper is applied as in training) over a *ragged* batch: every running sequence contributes only its
new tokens (one while decoding, a chunk of its prompt while prefilling), the projections and the MLP run on all of
them at once, and attention runs per sequence against that sequence's own cache (SDPA, grouped KV heads): no
sequence is padded to another's length. A sequence that ends its turn leaves the batch at once and the next
waiting one is admitted in the same step.

Sessions keep their cache between turns: `submit` keeps the longest prefix the cached ids share with the new
prompt ids and prefills only the rest (the tool result and the next generation prompt), so the ids the record
carries are exactly the ids the cache holds. `fork` copies a prefilled prefix to the episodes of a group.

Memory: the cache of every live session and the reservation (prompt + max_new_tokens) of every running request
count against `token_budget`; a request that does not fit waits for running ones to finish (back-pressure), and
idle sessions' caches are dropped (re-prefilled when they come back) before anything is refused. A budget
larger than the machine's available memory allows is refused with the figure that fits (`check_token_budget`).

Supported: the Llama family and Qwen2/Qwen3 (decoder layers with input/post-attention norms, q/k/v/o projections,
optional q/k norms, rotary embeddings, no sliding window), on the CPU. Anything else answers None from `engine_for` and the
caller keeps HF `generate`.
"""

from __future__ import annotations

import json
import os
import sys
import weakref
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

SUPPORTED_TYPES = ("llama", "qwen2", "qwen3", "mistral")
DEFAULT_PREFILL_CHUNK = 512


def bf16_supported() -> bool:
    """Whether this CPU does bf16 math natively (AVX512-BF16 or AMX); CUDA always does on the cards we use."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def free_cores() -> int:
    """Cores this process may use minus those the load average says are busy (at least 1)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    busy = int(os.getloadavg()[0]) if hasattr(os, "getloadavg") else 0
    return max(1, min(cores, cores - busy))


def base_model(model: Any) -> Any:
    return model.get_base_model() if hasattr(model, "get_base_model") else model


def supports(model: Any) -> bool:
    """Whether the engine can run this model's decoder layers itself."""
    if hasattr(model, "sample_completions") or not isinstance(model, torch.nn.Module):
        return False
    if any(type(m).__name__.startswith("FSDP") for m in (model, base_model(model))):
        return False  # sharded parameters are gathered by the root's forward hooks, which calling inner modules skips
    base = base_model(model)
    config = getattr(base, "config", None)
    if config is None or getattr(config, "model_type", None) not in SUPPORTED_TYPES:
        return False
    if getattr(config, "use_sliding_window", False) or any(t != "full_attention" for t in getattr(config, "layer_types", None) or []):
        return False
    inner = getattr(base, "model", None)
    return all(hasattr(inner, name) for name in ("embed_tokens", "layers", "norm", "rotary_emb")) and hasattr(base, "lm_head")


def model_device(model: Any) -> torch.device:
    return next(model.parameters()).device


def kv_bytes_per_token(model: Any, dtype: torch.dtype | None = None) -> int:
    dtype = dtype or next(model.parameters()).dtype
    return _kv_bytes(base_model(model).config.to_dict(), torch.finfo(dtype).bits // 8)


def _kv_bytes(config: dict[str, Any], dtype_bytes: int) -> int:
    """Keys and values of every layer for one token, from a model's config.json values."""
    head_dim = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    kv_heads = config.get("num_key_value_heads") or config["num_attention_heads"]
    return int(config["num_hidden_layers"]) * 2 * int(kv_heads) * int(head_dim) * dtype_bytes


def available_bytes() -> int:
    """MemAvailable from /proc/meminfo (the OS's estimate of what can be allocated without swapping)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 8 << 30


def token_budget_problem(per_token: int, token_budget: int, *, max_sequence: int = 0, share: float = 0.5) -> str | None:
    """Why a KV-cache budget cannot be held (more than `share` of the available memory, or less than one sequence),
    naming the figure that fits; None when it can."""
    fits = int(available_bytes() * share) // per_token
    if token_budget > fits:
        return (
            f"token_budget {token_budget:,} needs {token_budget * per_token / 2**30:.2f} GiB of KV cache "
            f"({per_token:,} bytes a token); {fits:,} tokens fit in {share:.0%} of the available memory"
        )
    if token_budget < max_sequence:
        return f"token_budget {token_budget:,} is smaller than one sequence (prompt + new tokens = {max_sequence:,})"
    return None


def check_token_budget(model: Any, token_budget: int, *, max_sequence: int = 0, share: float = 0.5) -> None:
    """ValueError naming the figure that fits when the engine could not hold `token_budget` tokens (above)."""
    problem = token_budget_problem(kv_bytes_per_token(model), token_budget, max_sequence=max_sequence, share=share)
    if problem:
        raise ValueError(problem)


def folder_token_budget_problem(folder: str | Path, token_budget: int, *, max_sequence: int = 0) -> str | None:
    """The same check for a model folder before anything is loaded (a run being created): its config.json's shape,
    at 4 bytes a value (the trainer holds CPU weights in fp32)."""
    config = json.loads((Path(folder) / "config.json").read_text())
    return token_budget_problem(_kv_bytes(config, 4), token_budget, max_sequence=max_sequence)


# The budget of engines built by `engine_for` when the caller names none: set once per run by the trainer from the
# recipe's `decode_token_budget` (a run is one process: a Celery task or a CLI call); None: a quarter of the memory.
_run_token_budget: int | None = None


def set_run_token_budget(token_budget: int | None) -> None:
    global _run_token_budget
    _run_token_budget = token_budget or None


@dataclass(eq=False)
class Session:
    """One sequence's KV cache: `ids` are the tokens whose keys and values it holds, in order."""

    ids: list[int] = field(default_factory=list)
    kv: torch.Tensor | None = None  # (layers, 2, kv_heads, capacity, head_dim)
    running: bool = False

    def __len__(self) -> int:
        return len(self.ids)

    def truncate(self, length: int) -> None:
        """Keep the first `length` tokens (a cache entry depends only on the tokens before it)."""
        del self.ids[length:]
        if not self.ids:
            self.kv = None

    def release(self) -> None:
        self.ids = []
        self.kv = None


@dataclass(frozen=True)
class Done:
    tag: Any
    ids: list[int]
    logprobs: list[float]
    finish: str  # "stop" (end-of-turn sampled) or "length"


@dataclass(eq=False)
class _Request:
    session: Session
    todo: list[int]  # tokens to feed before the next sample (the prompt's uncached rest, then each sampled token)
    max_new: int
    temperature: float
    tag: Any
    reserve: int  # tokens reserved against the budget while running
    ids: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


class DecodeEngine:
    """Continuous batching over a supported causal LM (module docstring)."""

    def __init__(
        self,
        model: Any,
        *,
        eos_id: int,
        token_budget: int | None = None,
        max_batch: int = 64,
        prefill_chunk: int = DEFAULT_PREFILL_CHUNK,
        autocast: bool = False,
        threads: int | None = None,
    ) -> None:
        assert supports(model), f"the decode engine does not run {type(base_model(model)).__name__}"
        if threads is not None and model_device(model).type == "cpu":
            torch.set_num_threads(threads)  # a busy core in the OpenMP team stalls every matmul (~6 ms each, measured)
        self.model = model
        base = base_model(model)
        self.config = base.config
        self.inner = base.model
        self.lm_head = base.lm_head
        self.layers = list(self.inner.layers)
        self.eos_id = int(eos_id)
        self.head_dim = getattr(self.config, "head_dim", None) or self.config.hidden_size // self.config.num_attention_heads
        self.kv_heads = self.config.num_key_value_heads
        self.scaling = self.head_dim**-0.5
        self.rope = sys.modules[type(self.layers[0].self_attn).__module__].apply_rotary_pos_emb
        self.device = next(model.parameters()).device
        self.autocast = autocast and self.device.type == "cpu" and bf16_supported()
        if token_budget is None:
            per_token = kv_bytes_per_token(model, torch.bfloat16 if self.autocast else None)
            token_budget = max(4096, min(1 << 18, int(available_bytes() * 0.25) // per_token))
        else:
            check_token_budget(model, token_budget)
        self.token_budget = int(token_budget)
        self.max_batch = max_batch
        self.prefill_chunk = prefill_chunk
        self.waiting: deque[_Request] = deque()
        self.running: list[_Request] = []
        self.sessions: weakref.WeakSet[Session] = weakref.WeakSet()
        self.stats = {"forward_steps": 0, "fed_tokens": 0, "sampled_tokens": 0, "reused_tokens": 0, "dropped_caches": 0}

    # -- sessions ---------------------------------------------------------------------------------------------------
    def session(self) -> Session:
        s = Session()
        self.sessions.add(s)
        return s

    def fork(self, parent: Session, n: int) -> list[Session]:
        """`n` sessions holding copies of `parent`'s cache (a group's prompt prefilled once)."""
        children = []
        for _ in range(n):
            child = self.session()
            child.ids = list(parent.ids)
            child.kv = parent.kv[:, :, :, : max(len(parent.ids), 1)].clone() if parent.kv is not None else None
            children.append(child)
        return children

    def prefill(self, session: Session, ids: list[int]) -> None:
        """Put `ids` in the session's cache (keeping the shared prefix), without sampling."""
        keep = _common_prefix(session.ids, ids)
        session.truncate(keep)
        rest = ids[keep:]
        for start in range(0, len(rest), self.prefill_chunk):
            self._forward([(session, rest[start : start + self.prefill_chunk])], logits_for=[])

    # -- scheduling -------------------------------------------------------------------------------------------------
    def submit(self, session: Session, prompt: list[int], *, max_new_tokens: int, temperature: float, tag: Any = None) -> None:
        """Queue one turn: sample up to `max_new_tokens` after `prompt`, reusing what `session` caches of it."""
        assert prompt, "an empty prompt"
        assert not session.running and all(r.session is not session for r in self.waiting), "a session takes one turn at a time"
        reserve = len(prompt) + max_new_tokens
        if reserve > self.token_budget:
            raise ValueError(
                f"one sequence needs {reserve:,} tokens (prompt {len(prompt):,} + {max_new_tokens:,} new) > token_budget {self.token_budget:,}"
            )
        keep = min(_common_prefix(session.ids, prompt), len(prompt) - 1)  # at least one token fed: its logits start the turn
        self.stats["reused_tokens"] += keep
        session.truncate(keep)
        self.waiting.append(_Request(session, list(prompt[keep:]), max_new_tokens, temperature, tag, reserve))

    def busy(self) -> bool:
        return bool(self.waiting or self.running)

    def _used(self) -> int:
        return sum(r.reserve for r in self.running) + sum(len(s) for s in self.sessions if not s.running)

    def _admit(self) -> None:
        while self.waiting and len(self.running) < self.max_batch:
            request = self.waiting[0]
            need = request.reserve - len(request.session)  # its cached part is counted already
            if self._used() + need > self.token_budget:
                idle = sorted(
                    (s for s in self.sessions if not s.running and len(s) and s is not request.session), key=len
                )  # the largest dropped first
                while idle and self._used() + need > self.token_budget:
                    idle.pop().release()  # back-pressure by recomputation, never by swapping
                    self.stats["dropped_caches"] += 1
                if self._used() + need > self.token_budget:
                    if not self.running:
                        raise RuntimeError(f"nothing runs and {need:,} tokens do not fit in token_budget {self.token_budget:,}")
                    return  # wait for a running turn to end
            self.waiting.popleft()
            request.session.running = True
            self.running.append(request)

    def step(self) -> list[Done]:
        """One forward over every running sequence's next tokens; the turns that ended in it."""
        self._admit()
        if not self.running:
            return []
        feeds, sampling = [], []
        for request in self.running:
            chunk = request.todo[: self.prefill_chunk]
            del request.todo[: len(chunk)]
            feeds.append((request.session, chunk))
            if not request.todo:
                sampling.append(request)
        logits = self._forward(feeds, logits_for=[i for i, r in enumerate(self.running) if not r.todo])
        finished: list[Done] = []
        picks = self._sample(logits, [r.temperature for r in sampling]) if sampling else []
        for request, (token, logprob) in zip(sampling, picks, strict=True):
            request.ids.append(token)
            request.logprobs.append(logprob)
            self.stats["sampled_tokens"] += 1
            if token == self.eos_id or len(request.ids) >= request.max_new:
                request.session.running = False
                finished.append(Done(request.tag, request.ids, request.logprobs, "stop" if token == self.eos_id else "length"))
            else:
                request.todo = [token]
        self.running = [r for r in self.running if r.session.running]
        return finished

    def generate(
        self, sessions: list[Session], prompts: list[list[int]], *, max_new_tokens: int, temperature: float
    ) -> list[tuple[list[int], list[float]]]:
        """One turn for each (session, prompt), all batched; results in order."""
        out: list[Any] = [None] * len(prompts)
        for i, (session, prompt) in enumerate(zip(sessions, prompts, strict=True)):
            self.submit(session, prompt, max_new_tokens=max_new_tokens, temperature=temperature, tag=i)
        while self.busy():
            for done in self.step():
                out[done.tag] = (done.ids, done.logprobs)
        return out

    @staticmethod
    def _sample(logits: torch.Tensor, temperatures: list[float]) -> list[tuple[int, float]]:
        """One token per row of fp32 logits (S, V): greedy where the temperature is 0 (the logprob then of the raw
        logits), else drawn from softmax(logits / temperature) by inverse CDF (one uniform per row: torch.multinomial
        draws an exponential per vocabulary entry, 3 ms a row for 49k entries here)."""
        t = torch.tensor([x if x > 0 else 1.0 for x in temperatures], dtype=logits.dtype).unsqueeze(1)
        logp = torch.log_softmax(logits / t, dim=-1)
        greedy = logits.argmax(dim=-1)
        cdf = logp.exp().cumsum(dim=-1)
        u = torch.rand(len(temperatures), 1, dtype=cdf.dtype) * cdf[:, -1:]
        drawn = torch.searchsorted(cdf, u).squeeze(1).clamp_(max=logits.shape[1] - 1)
        tokens = torch.where(torch.tensor([x > 0 for x in temperatures]), drawn, greedy)
        chosen = logp.gather(1, tokens.unsqueeze(1)).squeeze(1)
        return list(zip(tokens.tolist(), chosen.tolist(), strict=True))

    # -- the ragged forward -----------------------------------------------------------------------------------------
    @torch.inference_mode()
    def _forward(self, feeds: list[tuple[Session, list[int]]], *, logits_for: list[int]) -> torch.Tensor:
        """Feed each (session, new ids) through the model at once, appending to each cache; fp32 logits (len(logits_for), V)
        of the last new token of the feeds listed."""
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.autocast):
            return self._forward_inner(feeds, logits_for)

    def _forward_inner(self, feeds: list[tuple[Session, list[int]]], logits_for: list[int]) -> torch.Tensor:
        flat = [t for _, ids in feeds for t in ids]
        positions = [p for session, ids in feeds for p in range(len(session), len(session) + len(ids))]
        n = len(flat)
        ids_t = torch.tensor([flat], device=self.device)
        x = self.inner.embed_tokens(ids_t)  # (1, N, D)
        cos, sin = self.inner.rotary_emb(x, torch.tensor([positions], device=self.device))
        spans = []
        offset = 0
        for session, ids in feeds:
            past = len(session)
            spans.append((offset, len(ids), past, session))
            offset += len(ids)
        for layer_index, layer in enumerate(self.layers):
            attn = layer.self_attn
            h = layer.input_layernorm(x)
            q = attn.q_proj(h).view(1, n, -1, self.head_dim)
            k = attn.k_proj(h).view(1, n, -1, self.head_dim)
            v = attn.v_proj(h).view(1, n, -1, self.head_dim)
            if hasattr(attn, "q_norm"):
                q, k = attn.q_norm(q), attn.k_norm(k)
            q, k = self.rope(q.transpose(1, 2), k.transpose(1, 2), cos, sin)  # (1, heads, N, hd)
            v = v.transpose(1, 2)
            outs = []
            for start, length, past, session in spans:
                kv = self._reserve(session, past + length, dtype=k.dtype)
                kv[layer_index, 0, :, past : past + length] = k[0, :, start : start + length]
                kv[layer_index, 1, :, past : past + length] = v[0, :, start : start + length]
                keys = kv[layer_index, 0, :, : past + length].unsqueeze(0)
                values = kv[layer_index, 1, :, : past + length].unsqueeze(0)
                query = q[:, :, start : start + length]
                if length == 1:
                    mask, causal = None, False
                elif past == 0:
                    mask, causal = None, True
                else:
                    mask = torch.ones(length, past + length, dtype=torch.bool, device=self.device).tril(diagonal=past)
                    causal = False
                outs.append(
                    F.scaled_dot_product_attention(
                        query, keys, values, attn_mask=mask, is_causal=causal, scale=self.scaling, enable_gqa=True
                    )
                )
            o = torch.cat(outs, dim=2) if len(outs) > 1 else outs[0]
            x = x + attn.o_proj(o.transpose(1, 2).reshape(1, n, -1))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        for session, ids in feeds:
            session.ids.extend(ids)
        self.stats["forward_steps"] += 1
        self.stats["fed_tokens"] += n
        if not logits_for:
            return torch.empty(0)
        last = torch.tensor([spans[i][0] + spans[i][1] - 1 for i in logits_for], device=self.device)
        return self.lm_head(self.inner.norm(x[0, last])).float()

    def _reserve(self, session: Session, length: int, *, dtype: torch.dtype) -> torch.Tensor:
        """The session's cache tensor with room for `length` tokens (grown in steps of 256, contents kept)."""
        kv = session.kv
        if kv is not None and kv.shape[3] >= length and kv.dtype == dtype:
            return kv
        capacity = max(256, -(-length // 256) * 256, 2 * kv.shape[3] if kv is not None else 0)
        grown = torch.empty(len(self.layers), 2, self.kv_heads, capacity, self.head_dim, dtype=dtype, device=self.device)
        if kv is not None and session.ids:
            grown[:, :, :, : len(session.ids)] = kv[:, :, :, : len(session.ids)]
        session.kv = grown
        return grown


def engine_for(model: Any, tokenizer: Any, **options: Any) -> DecodeEngine | None:
    """An engine over `model`, or None where it should not run it (a generation server's client, an unsupported
    architecture, a model on a GPU): the caller then keeps HF generate."""
    if os.environ.get("PRACTICUM_DECODE_ENGINE", "1") == "0" or not supports(model) or model_device(model).type != "cpu":
        return None  # on a GPU the per-sequence attention calls would dominate: HF generate or the vLLM pool serve it
    options.setdefault("threads", free_cores())
    options.setdefault("token_budget", _run_token_budget)
    return DecodeEngine(model, eos_id=tokenizer.eos_token_id, **options)
