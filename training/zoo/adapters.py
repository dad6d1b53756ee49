"""Built real-model zoo specs kept in the repository as their LoRA adapters, so a fresh clone has them in seconds.

    keep_adapter(get_spec("smol-base"))      # after a build: training/zoo/adapters/smol-base-<hash>/
    materialize(get_spec("smol-base"))       # a clone without the build: merged onto its base into var/zoo/.../final

Why: smol-base is an hour of SFT on two cores, and var/ is not kept between machines, so every experiment on a new
machine would first rebuild it. A spec fine-tuned with LoRA (lora_r > 0) from a packaged model, or from another spec
that is itself built or kept, is small as an adapter (rank 16 on every linear layer of SmolLM2-135M: 4.9M parameters,
19.6 MB in fp32) while its merged model is 538 MB.

What is kept: the SFT stage's final adapter (adapter_config.json, adapter_model.safetensors, in the dtype it trained
in), the tokenizer's small files from the same folder, and the final folder's zoo.json (spec, hash, evaluation,
stage times). Materializing merges the adapter onto the same start folder with the build's own merge
(build._save_merged), so the final weights are the build's bit for bit and the kept evaluation describes them.
`resolve`, `build` and a spec continuing this one all materialize a kept adapter before they would build.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from training.config import ConfigError
from training.zoo.specs import SPECS, ZooSpec, config_hash

ADAPTERS = Path(__file__).resolve().parent / "adapters"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors")
TOKENIZER_FILES = ("tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")  # small; tokenizer.json is the base's


def adapter_folder(spec: ZooSpec, root: Path | None = None) -> Path:
    return (root or ADAPTERS) / f"{spec.name}-{config_hash(spec)}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def keep_adapter(spec: ZooSpec, root: Path | None = None) -> Path:
    """Copy a built LoRA spec's adapter, tokenizer files and zoo.json into `root` (atomically); returns the folder.
    Raises ConfigError when the spec is not built here, or was not trained with LoRA from a start folder."""
    from training.zoo.build import base_model_folder, build_folder

    folder = build_folder(spec)
    final, done = folder / "final", folder / "sft" / "done.json"
    if not (final / "zoo.json").exists() or not done.exists():
        raise ConfigError(f"{spec.name} is not built here; run `python -m training.zoo build {spec.name}` first", ["name"])
    adapter = Path(json.loads(done.read_text())["final"])
    if not spec.lora_r or spec.base_model is None or not (adapter / "adapter_config.json").exists():
        raise ConfigError(f"{spec.name}: only a spec fine-tuned with LoRA from a packaged or zoo model is kept as an adapter", ["name"])
    start = base_model_folder(spec)
    if (adapter / "tokenizer.json").exists() and _sha256(adapter / "tokenizer.json") != _sha256(start / "tokenizer.json"):
        raise ConfigError(f"{spec.name}: its tokenizer differs from its start model's; an adapter alone cannot give it", ["name"])
    target = adapter_folder(spec, root)
    staging = target.with_name(target.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    for name in ADAPTER_FILES + TOKENIZER_FILES:
        if (adapter / name).exists():
            shutil.copy2(adapter / name, staging / name)
    shutil.copy2(final / "zoo.json", staging / "zoo.json")
    shutil.rmtree(target, ignore_errors=True)
    staging.rename(target)
    return target


def materialize(spec: ZooSpec, root: Path | None = None, say: Callable[[str], object] = print) -> Path | None:
    """The spec's final folder made from its kept adapter (module docstring), or None when none is kept. A final
    folder that exists already is returned as it is."""
    from training.zoo.build import _save_merged, base_model_folder, build_folder

    kept = adapter_folder(spec, root)
    final = build_folder(spec) / "final"
    if (final / "zoo.json").exists():
        return final
    if not (kept / "adapter_config.json").exists():
        return None
    started = time.time()
    if spec.base_model in SPECS:  # continues another spec: that one first (kept or built)
        from training.zoo.build import build

        parent = SPECS[spec.base_model]
        if materialize(parent, root, say) is None:
            build(parent)
    start = base_model_folder(spec)
    staging = final.with_name("final.materializing")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    _save_merged(kept, str(start), staging, tokenizer_from=start)
    for name in TOKENIZER_FILES:  # the SFT run's own (its pad token, its template) over the start model's
        if (kept / name).exists():
            shutil.copy2(kept / name, staging / name)
    manifest = json.loads((kept / "zoo.json").read_text())
    manifest["materialized"] = {"from": kept.name, "seconds": round(time.time() - started, 1)}
    (staging / "zoo.json").write_text(json.dumps(manifest, indent=2))
    if manifest.get("hash") != config_hash(spec):
        shutil.rmtree(staging)
        raise ConfigError(f"{kept}: its zoo.json says hash {manifest.get('hash')}, the spec's is {config_hash(spec)}", ["name"])
    shutil.rmtree(final, ignore_errors=True)
    staging.rename(final)
    say(f"{spec.name}: made from its kept adapter {kept.name} in {time.time() - started:.0f}s")
    return final
