"""Every model load passes trust_remote_code=False, and a path is never looked up on the hub."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from training.modeling import load_model, pretrained_kwargs
from training.policies.hf import load_hf


@pytest.fixture
def loads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, dict[str, Any]]]:
    """Records the keyword arguments of each from_pretrained call, then loads as usual."""
    import transformers

    seen: list[tuple[str, dict[str, Any]]] = []
    for cls in (transformers.AutoModelForCausalLM, transformers.AutoTokenizer):
        original = cls.from_pretrained

        def spy(path: Any, *args: Any, _original: Any = original, _name: str = cls.__name__, **kwargs: Any) -> Any:
            seen.append((_name, kwargs))
            return _original(path, *args, **kwargs)

        monkeypatch.setattr(cls, "from_pretrained", spy)
    return seen


def test_training_loads_never_trust_remote_code_nor_reach_the_hub_for_a_path(tiny_path: Path, loads: list[Any]) -> None:
    load_model(str(tiny_path), trainable=False)
    assert [(name, kw["trust_remote_code"], kw["local_files_only"]) for name, kw in loads] == [
        ("AutoTokenizer", False, True),
        ("AutoModelForCausalLM", False, True),
    ]


def test_the_hf_policy_loads_never_trust_remote_code(tiny_path: Path, loads: list[Any]) -> None:
    load_hf.cache_clear()
    load_hf(str(tiny_path), "cpu", "float32")
    load_hf.cache_clear()
    assert {name: (kw["trust_remote_code"], kw["local_files_only"]) for name, kw in loads} == {
        "AutoTokenizer": (False, True),
        "AutoModelForCausalLM": (False, True),
    }


def test_only_a_bare_hub_id_may_download_and_nothing_trusts_remote_code() -> None:
    assert pretrained_kwargs("/models/gpt2") == {"trust_remote_code": False, "local_files_only": True}
    assert pretrained_kwargs("./gpt2") == {"trust_remote_code": False, "local_files_only": True}
    assert pretrained_kwargs("Qwen/Qwen3-0.6B") == {"trust_remote_code": False, "local_files_only": False}


def test_two_threads_loading_at_once_both_get_a_whole_model(tiny_path: Path) -> None:
    """The embedded worker runs an evaluation's seeds in threads: two loads at once lost the tied output head
    ("Cannot copy out of meta tensor") before loads took turns (training.modeling.PRETRAINED_LOCK)."""
    load_hf.cache_clear()
    barrier = threading.Barrier(2)
    loaded: dict[str, Any] = {}

    def load(dtype: str) -> None:
        barrier.wait()
        try:
            loaded[dtype] = load_hf(str(tiny_path), "cpu", dtype)[0]
        except Exception as exc:  # what a failed load raised, for the assertion below
            loaded[dtype] = exc

    threads = [threading.Thread(target=load, args=(dtype,)) for dtype in ("float32", "bfloat16")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    load_hf.cache_clear()
    assert {dtype: type(model).__name__ for dtype, model in loaded.items()} == {
        "float32": "Qwen3ForCausalLM",
        "bfloat16": "Qwen3ForCausalLM",
    }
    for model in loaded.values():
        assert model.lm_head.weight.device.type == "cpu" and model.lm_head.weight is model.model.embed_tokens.weight
