"""The model zoo: small Qwen3 models trained here from scratch on the environments' training data.

    python -m training.zoo build base-small          # tokenizer -> pretrain -> SFT -> eval, cached in var/zoo/
    path = resolve("base-small")                     # its final from_pretrained folder (or a path, as given)
    style = prompt_style_for(path)                   # the PromptStyle it was trained with: sample with the same one

Specs live in training/zoo/specs.py; a teacher spec continues from its student's pretrained stage, so the two
share one tokenizer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from training.config import ConfigError
from training.data import PromptStyle
from training.zoo.specs import SPECS, ZooSpec, config_hash, get_spec

__all__ = ["SPECS", "ZooSpec", "config_hash", "get_spec", "manifest", "prompt_style_for", "resolve"]


def resolve(name_or_path: str) -> Path:
    """A spec name -> its built final folder; an existing path -> itself. Raises ConfigError naming the build command."""
    if name_or_path in SPECS:
        from training.zoo.build import build_folder

        final = build_folder(get_spec(name_or_path)) / "final"
        if not (final / "zoo.json").exists():
            from training.zoo.adapters import materialize

            materialize(get_spec(name_or_path))  # kept in the repository as an adapter: made here in seconds
        if not (final / "zoo.json").exists():
            raise ConfigError(
                f"zoo model {name_or_path!r} is not built yet ({final}); run `python -m training.zoo build {name_or_path}`", ["model"]
            )
        return final
    path = Path(name_or_path)
    if not path.exists():
        raise ConfigError(f"{name_or_path!r} is neither a zoo spec ({', '.join(SPECS)}) nor an existing folder", ["model"])
    return path


def manifest(model_path: str | Path) -> dict[str, Any]:
    """The model folder's zoo.json (spec, hash, prompt style, stage times, evaluation); {} for a model from elsewhere."""
    path = Path(model_path) / "zoo.json"
    return json.loads(path.read_text()) if path.exists() else {}


def prompt_style_for(model_path: str | Path) -> PromptStyle:
    """The prompt style a zoo model was trained with (zoo.json), or a packaged model's own (the store's manifest.json:
    SmolLM2 lists its tools compactly); PromptStyle() for any other model."""
    from training.model_store import read_manifest

    style = manifest(model_path).get("prompt_style") or read_manifest(Path(model_path)).get("prompt_style") or {}
    return PromptStyle(compact_tools=bool(style.get("compact_tools", False)), max_result_chars=int(style.get("max_result_chars", 0)))
