"""Generation apart from training: a pool that serves the current policy, and how new weights reach it.

    pool = HFWorkerPool(root, workers=2)            # CPU stand-in: HF generate in worker processes (tests, small runs)
    pool = VLLMServerPool(root, urls)               # GPU: vLLM OpenAI-compatible servers (the `gpu` extra on them)
    pool.push(model, tokenizer, version=7)          # after an update: publish snapshot 7, make the pool serve it
    pending = pool.submit(jobs, version=7, seed=s, options={...})
    records = pending.result(timeout=600)           # canonical records; header.meta.policy_version == 7

Weight push, the documented mechanism: the trainer writes a versioned snapshot `ROOT/v000007/` with
save_pretrained (safetensors weights, config, tokenizer), then atomically replaces `ROOT/LATEST` (the number) and
the symlink `ROOT/current` (-> v000007). An HF worker reloads whenever a request names a version it has not
loaded (every request names one, so a batch is never sampled from two versions). A vLLM server is started on
`ROOT/current` with `VLLM_SERVER_DEV_MODE=1` (`vllm serve ROOT/current --served-model-name policy`); after the
symlink moves, push calls each server's `POST /collective_rpc {"method": "reload_weights"}`, which reloads the
weights from the model path on disk. That endpoint exists only in vLLM's dev mode: keep those servers on a
private network. Snapshots older than the pool's `keep` newest are deleted.
"""

from __future__ import annotations

import os
import queue
import shutil
import weakref
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import torch

from environments.records import Record

SNAPSHOT = "v{:06d}"


def publish_snapshot(model: Any, tokenizer: Any, root: Path, version: int, keep: int = 3) -> Path:
    """Write snapshot `version` under root, point LATEST and current at it, drop snapshots older than `keep` newest."""
    root.mkdir(parents=True, exist_ok=True)
    folder = root / SNAPSHOT.format(version)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    (root / "LATEST.tmp").write_text(str(version))
    os.replace(root / "LATEST.tmp", root / "LATEST")
    link = root / "current.tmp"
    link.unlink(missing_ok=True)
    link.symlink_to(folder.name)
    os.replace(link, root / "current")
    for old in sorted(root.glob("v[0-9]*"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def tag_version(records: list[Record], version: int) -> list[dict[str, Any]]:
    for record in records:
        record["header"].setdefault("meta", {})["policy_version"] = version
    return records


def chunks(jobs: list[Any], count: int) -> list[list[Any]]:
    """Contiguous, nearly equal pieces in order (empty pieces dropped)."""
    size, extra = divmod(len(jobs), count)
    out, start = [], 0
    for index in range(count):
        end = start + size + (index < extra)
        if end > start:
            out.append(jobs[start:end])
        start = end
    return out


def _hf_worker(requests: Any, results: Any, root: str) -> None:
    """One generation process: load snapshot versions as requests name them, play the jobs, send records back."""
    from training.modeling import load_model
    from training.sampling import rollout_episodes

    torch.set_num_threads(1)
    loaded, model, tokenizer = None, None, None
    while (message := requests.get()) is not None:
        ticket, version, jobs, seed, options = message
        try:
            if version != loaded:
                model, tokenizer = load_model(str(Path(root) / SNAPSHOT.format(version)), device=torch.device("cpu"), trainable=False)
                loaded = version
            torch.manual_seed(seed)
            results.put((ticket, tag_version(rollout_episodes(model, tokenizer, jobs, **options), version), None))
        except Exception as exc:  # the trainer raises it with the worker's reason
            results.put((ticket, None, f"{type(exc).__name__}: {exc}"))
    results.close()
    results.join_thread()  # every answer is flushed to the pipe; then skip interpreter teardown, which idles ~10 s here
    os._exit(0)


class Pending:
    """Records of one submit, gathered from the pool's pieces in job order."""

    def __init__(self, pool: HFWorkerPool, tickets: list[int], version: int) -> None:
        self.pool, self.tickets, self.version = pool, tickets, version

    def result(self, timeout: float = 600.0) -> list[dict[str, Any]]:
        return [record for ticket in self.tickets for record in self.pool.collect(ticket, timeout)]


class HFWorkerPool:
    """`workers` spawned processes with HF generate on CPU; piece i of a submit goes to worker i, seeded seed + i."""

    def __init__(self, root: Path, *, workers: int = 2, keep: int = 3) -> None:
        import multiprocessing

        context = multiprocessing.get_context("spawn")  # a forked torch process can deadlock in its thread pools
        self.root, self.keep = Path(root), keep
        self.results = context.Queue()
        self.requests = [context.Queue() for _ in range(workers)]
        self.processes = [context.Process(target=_hf_worker, args=(q, self.results, str(self.root)), daemon=True) for q in self.requests]
        for process in self.processes:
            process.start()
        self.ready: dict[int, tuple[Any, Any]] = {}
        self.next_ticket = 0
        self._finalizer = weakref.finalize(self, _shutdown, self.requests, self.results, self.processes)

    def push(self, model: Any, tokenizer: Any, *, version: int) -> Path:
        return publish_snapshot(model, tokenizer, self.root, version, self.keep)

    def submit(self, jobs: list[tuple[str, int]], *, version: int, seed: int, options: dict[str, Any]) -> Pending:
        assert (self.root / SNAPSHOT.format(version)).is_dir(), f"policy version {version} was never pushed to {self.root}"
        tickets = []
        for index, piece in enumerate(chunks(jobs, len(self.processes))):
            tickets.append(self.next_ticket)
            self.requests[index].put((self.next_ticket, version, piece, seed + index, options))
            self.next_ticket += 1
        return Pending(self, tickets, version)

    def collect(self, ticket: int, timeout: float) -> Any:
        while ticket not in self.ready:
            try:
                got, records, error = self.results.get(timeout=timeout)
            except queue.Empty:
                raise TimeoutError(f"generation worker gave no answer in {timeout}s (ticket {ticket})") from None
            self.ready[got] = (records, error)
        records, error = self.ready.pop(ticket)
        if error is not None:
            raise RuntimeError(f"generation worker failed: {error}")
        return records

    def close(self) -> None:
        self._finalizer()


def _shutdown(requests: list[Any], results: Any, processes: list[Any]) -> None:
    for inbox in requests:
        inbox.put(None)
    for process in processes:
        process.join(timeout=10)
        if process.is_alive():
            process.kill()
            process.join(timeout=5)
    for channel in [*requests, results]:
        channel.close()
        channel.cancel_join_thread()


class VLLMServerPool:
    """vLLM OpenAI-compatible servers started on ROOT/current (module docstring); jobs are split across servers and
    each piece is played by the same sampler loop as local rollouts, with completions from its server."""

    def __init__(self, root: Path, urls: list[str], *, served_model: str = "policy", keep: int = 3, timeout: float = 600.0) -> None:
        assert urls, "a vLLM pool needs at least one server URL"
        self.root, self.urls, self.served_model, self.keep, self.timeout = Path(root), list(urls), served_model, keep, timeout
        self.executor = ThreadPoolExecutor(max_workers=len(urls))
        self.inflight: list[Future[Any]] = []

    def push(self, model: Any, tokenizer: Any, *, version: int) -> Path:
        import httpx

        for future in self.inflight:  # a server reloads in place: let every running piece finish on the old weights
            future.exception()
        self.inflight.clear()
        folder = publish_snapshot(model, tokenizer, self.root, version, self.keep)
        self.tokenizer = tokenizer
        for url in self.urls:
            response = httpx.post(f"{url.rstrip('/')}/collective_rpc", json={"method": "reload_weights"}, timeout=self.timeout)
            if response.status_code != 200:
                raise RuntimeError(
                    f"{url}: reload_weights answered {response.status_code} {response.text[:300]} (is VLLM_SERVER_DEV_MODE=1 set?)"
                )
        return folder

    def submit(self, jobs: list[tuple[str, int]], *, version: int, seed: int, options: dict[str, Any]) -> Any:
        from training.sampling import rollout_episodes

        def play(url: str, piece: list[tuple[str, int]], piece_seed: int) -> list[dict[str, Any]]:
            sampler = ServerSampler(url, self.served_model, seed=piece_seed, timeout=self.timeout)
            return tag_version(rollout_episodes(sampler, self.tokenizer, piece, **options), version)

        futures = [
            self.executor.submit(play, url, piece, seed + i)
            for i, (url, piece) in enumerate(zip(self.urls, chunks(jobs, len(self.urls)), strict=False))
        ]
        self.inflight.extend(futures)
        return _Joined(futures)

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)


class _Joined:
    def __init__(self, futures: list[Future[Any]]) -> None:
        self.futures = futures

    def result(self, timeout: float = 600.0) -> list[dict[str, Any]]:
        return [record for future in self.futures for record in future.result(timeout)]


class ServerSampler:
    """What training.sampling.generate asks of a model, answered by a vLLM server's /v1/completions on token ids."""

    def __init__(self, url: str, model: str, *, seed: int, timeout: float) -> None:
        self.url, self.model, self.seed, self.timeout = url.rstrip("/"), model, seed, timeout

    def sample_completions(
        self, prompts: list[list[int]], *, max_new_tokens: int, temperature: float, eos_id: int
    ) -> list[tuple[list[int], list[float]]]:
        import httpx

        body = {
            "model": self.model,
            "prompt": prompts,
            "max_tokens": max_new_tokens,
            "temperature": temperature,
            "seed": self.seed,
            "logprobs": 0,
            "return_tokens_as_token_ids": True,
            "skip_special_tokens": False,
        }
        response = httpx.post(f"{self.url}/v1/completions", json=body, timeout=self.timeout)
        response.raise_for_status()
        out: list[tuple[list[int], list[float]]] = [([], [])] * len(prompts)
        for choice in response.json()["choices"]:
            ids = [int(token.removeprefix("token_id:")) for token in choice["logprobs"]["tokens"]]
            logprobs = [float(x) for x in choice["logprobs"]["token_logprobs"]]
            if choice.get("finish_reason") == "stop" and (not ids or ids[-1] != eos_id):
                ids, logprobs = ids + [eos_id], logprobs + [float("nan")]  # the stop token, when the server leaves it out
            out[choice["index"]] = (ids, logprobs)
        return out
