"""The model zoo on the `smoke` spec (32 wide, a few steps) in a temporary var root."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from safetensors.torch import load_file

from environments.registry import get_task, make
from training.config import ConfigError
from training.data import PromptStyle
from training.sampling import system_prompt_for
from training.zoo import build as zoo_build
from training.zoo import evaluate as zoo_evaluate
from training.zoo import manifest, prompt_style_for, resolve
from training.zoo.build import BuildControl, Interrupted, build, build_folder, demonstrations
from training.zoo.corpus import HELD_OUT_SEED, build_corpus
from training.zoo.evaluate import results_table
from training.zoo.specs import SPECS, ZooSpec, config_hash

SMOKE = SPECS["smoke"]
STUB_RESULTS = {
    "toolgym/lookup": {"correct": {"mean": 0.5, "ci95": 0.1, "n": 2.0}},
    "phantom/lookup-dev": {
        k: {"mean": 0.0, "ci95": 0.0, "n": 2.0}
        for k in ("accuracy", "composite", "keyword_accuracy", "keyword_composite", "paired_composite_diff")
    },
    "storebench/train": {"valid_call_rate": {"mean": 1.0, "ci95": 0.0, "n": 1.0}},
}


@pytest.fixture
def var_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path / "var"))
    return tmp_path / "var"


@pytest.fixture
def quick_eval(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Evaluation replaced by fixed results (test_evaluation_runs_on_the_smoke_model plays for real)."""
    calls: list[str] = []

    def fake(path: str, spec: ZooSpec) -> dict[str, Any]:
        calls.append(path)
        return STUB_RESULTS

    monkeypatch.setattr(zoo_build, "evaluate_model", fake)
    return calls


def quiet() -> BuildControl:
    lines: list[str] = []
    return BuildControl(say=lines.append)


def test_spec_validation_names_the_field() -> None:
    with pytest.raises(ConfigError) as bad_heads:
        ZooSpec(name="x", hidden_size=30, num_heads=4)
    assert "num_heads" in bad_heads.value.fields and "hidden_size=30" in str(bad_heads.value)
    with pytest.raises(ConfigError) as bad_lr:
        ZooSpec(name="x", sft_lr=0.0, phantom_levels=("lookup", "nowhere"))
    assert set(bad_lr.value.fields) == {"sft_lr", "phantom_levels"} and "nowhere" in str(bad_lr.value)


def test_hash_is_stable_and_follows_every_field(monkeypatch: pytest.MonkeyPatch) -> None:
    assert re.fullmatch(r"[0-9a-f]{12}", config_hash(SMOKE))
    assert config_hash(SMOKE) == config_hash(dataclasses.replace(SMOKE))
    assert config_hash(dataclasses.replace(SMOKE, seed=1)) != config_hash(SMOKE)
    assert config_hash(dataclasses.replace(SMOKE, max_result_chars=300)) != config_hash(SMOKE)
    child = dataclasses.replace(SMOKE, name="smoke-child", parent="smoke", sft_steps=3)
    monkeypatch.setitem(SPECS, "smoke-child", child)
    before = config_hash(child)
    monkeypatch.setitem(SPECS, "smoke", dataclasses.replace(SMOKE, sft_lr=0.5))  # the parent changed: so does the child
    assert config_hash(child) != before


def test_fields_added_later_keep_the_existing_cache_keys_until_set() -> None:
    assert config_hash(SPECS["base-small"]) == "49291507844b"  # the key of the base built before sft_sources existed
    assert config_hash(dataclasses.replace(SMOKE, sft_sources=("servicedesk",))) != config_hash(SMOKE)
    with pytest.raises(ConfigError) as error:
        ZooSpec(name="x", sft_sources=("toolgym", "chess"))
    assert error.value.fields == ["sft_sources"] and "servicedesk" in str(error.value)


def test_service_desk_demonstrations_are_the_oracles_passed_calls_with_the_caller_speaking() -> None:
    records = demonstrations(dataclasses.replace(SMOKE, sft_sources=("servicedesk",), sft_episodes=1))
    tasks = {f"{r['header']['env']}/{r['header']['task']}" for r in records}
    assert len(tasks) > 20 and all(t.startswith("servicedesk/") and get_task(t).split == "train" for t in tasks)
    assert all(r["header"]["score"]["passed"] for r in records)
    assert all("user" in {s["source"] for s in r["steps"]} for r in records)
    first = records[0]
    assert first["header"]["harness"]["system_prompt"] == system_prompt_for(make(f"servicedesk/{first['header']['task']}", 0))


def test_a_child_must_share_the_parents_pretraining(monkeypatch: pytest.MonkeyPatch) -> None:
    child = dataclasses.replace(SMOKE, name="smoke-child", parent="smoke", vocab_size=512)
    with pytest.raises(ConfigError) as error:
        config_hash(child)
    assert error.value.fields == ["vocab_size"]


def test_corpus_reads_training_splits_and_seeds_only() -> None:
    corpus = build_corpus(SMOKE)
    assert corpus.documents and corpus.chars == sum(len(d) for d in corpus.documents)
    seen_tasks = {t for source in corpus.sources.values() for t in source.get("tasks", [])}
    assert {"toolgym/lookup", "phantom/lookup-train", "storebench/cold-snap"} <= seen_tasks
    assert all(get_task(t).split == "train" for t in seen_tasks), seen_tasks
    seeds = [s for source in corpus.sources.values() for s in source.get("seeds", [])]
    assert seeds and max(seeds) < HELD_OUT_SEED
    assert "toolgym/guess" not in corpus.sources["toolgym"]["tasks"]  # a constant answer teaches nothing
    assert any("<tool_call>" in d for d in corpus.documents) and any("<|im_start|>system" in d for d in corpus.documents)
    assert build_corpus(SMOKE).documents == corpus.documents  # deterministic
    assert build_corpus(dataclasses.replace(SMOKE, seed=1)).documents != corpus.documents  # the seed orders it


def test_build_writes_a_loadable_model_and_a_second_build_is_a_cache_hit(var_root: Path, quick_eval: list[str]) -> None:
    from transformers import AutoModelForCausalLM

    with pytest.raises(ConfigError, match="python -m training.zoo build smoke"):
        resolve("smoke")
    final = build(SMOKE, control=quiet())
    assert final == build_folder(SMOKE) / "final" and final.is_relative_to(var_root)
    info = manifest(final)
    assert info["hash"] == config_hash(SMOKE) and info["evaluation"] == STUB_RESULTS
    assert set(info["wall_s"]) == {"tokenizer", "pretrain", "sft", "eval"}
    assert AutoModelForCausalLM.from_pretrained(final).config.hidden_size == 32
    stamp = (final / "zoo.json").stat().st_mtime_ns
    control = quiet()
    lines: list[str] = []
    control.say = lines.append
    assert build(SMOKE, control=control) == final
    assert lines == [f"smoke is built: {final}"] and len(quick_eval) == 1
    assert (final / "zoo.json").stat().st_mtime_ns == stamp
    assert resolve("smoke") == final and resolve(str(final)) == final
    assert prompt_style_for(final) == PromptStyle(compact_tools=True, max_result_chars=SMOKE.max_result_chars)
    assert prompt_style_for(var_root) == PromptStyle()  # no zoo.json: the default style
    with pytest.raises(ConfigError, match="neither a zoo spec"):
        resolve(str(var_root / "nowhere"))


def test_an_interrupted_build_resumes_to_the_straight_builds_weights(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, quick_eval: list[str]
) -> None:
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path / "straight"))
    straight = load_file(build(SMOKE, control=quiet()) / "model.safetensors")
    monkeypatch.setenv("PRACTICUM_VAR_DIR", str(tmp_path / "resumed"))
    control = quiet()
    control.stop_after_checkpoints = 1
    with pytest.raises(Interrupted):
        build(SMOKE, control=control)
    run = build_folder(SMOKE) / "pretrain" / "run"
    assert [p.name for p in run.glob("step-*")] == [f"step-{SMOKE.save_every:06d}"]
    assert not (build_folder(SMOKE) / "pretrain" / "done.json").exists()
    resumed = load_file(build(SMOKE, control=quiet()) / "model.safetensors")
    assert straight.keys() == resumed.keys()
    assert all((straight[k] == resumed[k]).all() for k in straight)
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == list(range(1, SMOKE.pretrain_steps + 1))


def test_a_run_killed_before_its_first_checkpoint_starts_its_metrics_over(var_root: Path, quick_eval: list[str]) -> None:
    run = build_folder(SMOKE) / "pretrain" / "run"
    run.mkdir(parents=True)
    (run / "metrics.jsonl").write_text('{"step": 1, "loss": 9.0}\n{"step": 2, "loss": 8.0}\n')  # a killed run's lines
    build(SMOKE, control=quiet())
    lines = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [line["step"] for line in lines] == list(range(1, SMOKE.pretrain_steps + 1)) and lines[0]["loss"] != 9.0


def test_a_teacher_continues_from_its_parents_pretrained_stage(
    var_root: Path, monkeypatch: pytest.MonkeyPatch, quick_eval: list[str]
) -> None:
    from transformers import AutoTokenizer

    from training.modeling import check_same_vocabulary

    teacher = dataclasses.replace(SMOKE, name="smoke-teacher", parent="smoke", sft_steps=3)
    monkeypatch.setitem(SPECS, "smoke-teacher", teacher)
    final = build(teacher, control=quiet())
    assert not (build_folder(teacher) / "pretrain").exists()  # the parent's stage, not a copy
    assert (build_folder(SMOKE) / "pretrain" / "done.json").exists()
    start = json.loads((final / "training_config.json").read_text())["config"]["model"]
    assert start == json.loads((build_folder(SMOKE) / "pretrain" / "done.json").read_text())["final"]
    parent_tokenizer = AutoTokenizer.from_pretrained(build_folder(SMOKE) / "tokenizer")
    check_same_vocabulary(AutoTokenizer.from_pretrained(final), parent_tokenizer)
    assert manifest(final)["parent"] == {"name": "smoke", "hash": config_hash(SMOKE)}


def test_evaluation_runs_on_the_smoke_model(var_root: Path) -> None:
    final = build(SMOKE, control=quiet())
    evaluation = manifest(final)["evaluation"]
    assert evaluation["toolgym/lookup"]["correct"]["n"] == SMOKE.eval_episodes
    assert evaluation["toolgym/lookup"]["seeds"].startswith(str(HELD_OUT_SEED))
    phantom = evaluation["phantom/lookup-dev"]
    assert phantom["keyword_composite"]["n"] == SMOKE.eval_episodes and 0.0 <= phantom["accuracy"]["mean"] <= 1.0
    assert 0.0 <= evaluation["storebench/train"]["valid_call_rate"]["mean"] <= 1.0
    table = results_table({"smoke": evaluation})
    assert "| toolgym/lookup held-out correct (greedy) |" in table and "keyword anchor" in table


def test_a_service_desk_model_is_evaluated_on_held_out_calls_only(var_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Its own pretrained stage: a call's first turns need more positions than the smoke's 512 (a 400-token vocabulary).
    desk = dataclasses.replace(
        SMOKE, name="smoke-desk", sft_sources=("servicedesk",), sft_episodes=1, max_positions=1536, sft_max_tokens=1536, eval_episodes=1
    )
    monkeypatch.setitem(SPECS, "smoke-desk", desk)
    monkeypatch.setattr(zoo_evaluate, "DESK_TURNS", 2)  # a random model's 16 turns of 96 tokens are the slow part
    evaluation = manifest(build(desk, control=quiet()))["evaluation"]
    assert set(evaluation) == {"servicedesk/roaming-on", "servicedesk/train"}
    assert evaluation["servicedesk/train"]["passed"]["n"] == desk.eval_episodes
    assert evaluation["servicedesk/roaming-on"]["seeds"].startswith(str(HELD_OUT_SEED))
    table = results_table({"smoke-desk": evaluation})
    assert "servicedesk/train templates held-out passed" in table and "toolgym" not in table


def test_the_cli_lists_builds_and_writes_the_readme_table(
    var_root: Path, tmp_path: Path, quick_eval: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    from training.zoo import __main__ as cli

    assert cli.main(["path", "smoke"]) == 2 and "python -m training.zoo build smoke" in capsys.readouterr().err
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{cli.BEGIN}\nold\n{cli.END}\noutro\n")
    build(SMOKE, control=quiet())
    final = build_folder(SMOKE) / "final"
    assert cli.main(["list"]) == 0 and re.search(rf"smoke\s+{config_hash(SMOKE)}\s+built\s+{final}", capsys.readouterr().out)
    assert cli.main(["eval", "smoke"]) == 0 and "| toolgym/lookup held-out correct (greedy) | 0.500 ± 0.100 |" in capsys.readouterr().out
    results = tmp_path / "results"
    assert cli.publish(SMOKE, root=results) == results / "smoke.json"
    published = json.loads((results / "smoke.json").read_text())
    assert published["hash"] == config_hash(SMOKE) and published["commit"] is not None and published["machine"]["cores"] >= 1
    (results / "teacher-small.json").write_text("{not json")  # a malformed file is named and left out
    cli.update_readme(readme, names=("smoke", "teacher-small"), root=results)
    text = readme.read_text()
    assert text.startswith(f"intro\n<!-- zoo:begin -->\n| measure | smoke ({config_hash(SMOKE)}) |\n") and text.endswith(
        "<!-- zoo:end -->\noutro\n"
    )
    assert "old" not in text and "targets: toolgym/lookup >= 0.80 correct: NO" in text
    assert "teacher-small.json: skipped (JSONDecodeError" in text
    with pytest.raises(ConfigError, match="not built here"):
        cli.publish(SPECS["teacher-small"], root=results)


def test_the_readme_zoo_table_is_what_the_committed_result_files_give() -> None:
    from training.zoo import __main__ as cli

    text = (cli.REPO_ROOT / "training" / "README.md").read_text()
    shown = text.split(cli.BEGIN, 1)[1].split(cli.END, 1)[0].strip()
    assert shown == cli.readme_section().strip(), "run `python -m training.zoo report` and commit training/README.md"


def test_storebench_targets_come_from_the_zero_shot_files(tmp_path: Path) -> None:
    from training.zoo import __main__ as cli

    assert cli.storebench_short_targets("smol-base", root=tmp_path) == {}  # not played yet: no claim either way
    for player, composite, valid in (("smol-base", 0.2, 0.97), ("do-nothing", 0.1, None)):
        (tmp_path / player).mkdir()
        summary = {"composite": composite, "valid_call_rate": valid}
        (tmp_path / player / "storebench-short.json").write_text(json.dumps({"summary": summary}))
    assert cli.storebench_short_targets("smol-base", root=tmp_path) == {
        "storebench-short valid calls >= 0.95": True,
        "storebench-short composite > do-nothing": True,
    }


def test_a_spec_continues_another_built_zoo_model(var_root: Path, quick_eval: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # As smol-teacher continues smol-base: SFT starts from the other spec's final folder, whose spec is in the hash.
    follow = dataclasses.replace(SMOKE, name="smoke-more", base_model="smoke", sft_steps=1, save_every=0)
    monkeypatch.setitem(SPECS, "smoke-more", follow)
    with pytest.raises(ConfigError, match="run `python -m training.zoo build smoke` first"):
        build(follow, control=quiet())
    first = build(SMOKE, control=quiet())
    final = build(follow, control=quiet())
    info = manifest(final)
    assert info["base_model"] == {"name": "smoke", "zoo_hash": config_hash(SMOKE), "base_model": None}
    assert json.loads((build_folder(follow) / "sft" / "done.json").read_text())["start_from"] == str(first)
    monkeypatch.setitem(SPECS, "smoke", dataclasses.replace(SMOKE, sft_steps=3))
    assert config_hash(follow) != info["hash"]  # another smoke makes another continuation
    with pytest.raises(ConfigError, match="cannot continue itself"):
        dataclasses.replace(SMOKE, base_model="smoke")


def test_a_kept_adapter_makes_the_built_model_bit_for_bit_without_training(
    var_root: Path, quick_eval: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """smol-base is kept in the repository as its LoRA adapter (training/zoo/adapters.py); here a LoRA spec continues
    the smoke model, is kept, its build is deleted, and resolve() makes the same weights again with no SFT."""
    from training.zoo import adapters

    lora = dataclasses.replace(SMOKE, name="smoke-lora", base_model="smoke", lora_r=4, sft_steps=1, save_every=0)
    monkeypatch.setitem(SPECS, "smoke-lora", lora)
    monkeypatch.setattr(adapters, "ADAPTERS", tmp_path / "adapters")
    build(SMOKE, control=quiet())
    with pytest.raises(ConfigError, match="only a spec fine-tuned with LoRA"):
        adapters.keep_adapter(SMOKE)
    built = build(lora, control=quiet())
    weights = (built / "model.safetensors").read_bytes()
    kept = adapters.keep_adapter(lora)
    assert kept == tmp_path / "adapters" / f"smoke-lora-{config_hash(lora)}"
    assert {p.name for p in kept.iterdir()} == {
        "adapter_config.json",
        "adapter_model.safetensors",
        "zoo.json",
        "tokenizer_config.json",
        "chat_template.jinja",
    }
    assert not (kept / "model.safetensors").exists()

    shutil.rmtree(build_folder(lora))
    monkeypatch.setattr(zoo_build, "_sft_stage", lambda *a, **k: pytest.fail("a kept adapter is never trained again"))
    final = resolve("smoke-lora")
    assert final == build_folder(lora) / "final" and (final / "model.safetensors").read_bytes() == weights
    info = manifest(final)
    assert info["hash"] == config_hash(lora) and info["materialized"]["from"] == kept.name and info["evaluation"] == STUB_RESULTS
    assert build(lora, control=quiet()) == final  # built now: the same folder, nothing made again


def test_an_evaluation_left_pending_is_completed_by_eval_rerun(
    var_root: Path, quick_eval: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """smol-teacher was trained and kept with its evaluation stopped (zoo.json `evaluation_pending`): `eval NAME --rerun`
    plays it, writes it into the final folder's and the kept adapter's zoo.json, publishes the result and the table."""
    from training.zoo import __main__ as cli
    from training.zoo import adapters

    lora = dataclasses.replace(SMOKE, name="smoke-lora", base_model="smoke", lora_r=4, sft_steps=1, save_every=0)
    monkeypatch.setitem(SPECS, "smoke-lora", lora)
    monkeypatch.setattr(adapters, "ADAPTERS", tmp_path / "adapters")
    monkeypatch.setattr(cli, "adapter_folder", lambda spec: adapters.adapter_folder(spec, tmp_path / "adapters"))
    published: list[str] = []
    monkeypatch.setattr(cli, "publish", lambda spec: published.append(spec.name) or tmp_path / "results" / f"{spec.name}.json")
    monkeypatch.setattr(cli, "update_readme", lambda: published.append("readme"))
    monkeypatch.setattr(cli, "REPO_ROOT", tmp_path)
    build(SMOKE, control=quiet())
    final = build(lora, control=quiet())
    info = manifest(final)
    pending = {**info, "evaluation": {}, "targets_reached": {}, "evaluation_pending": "stopped at 21 GB"}
    (final / "zoo.json").write_text(json.dumps(pending))
    kept = adapters.keep_adapter(lora)
    assert json.loads((kept / "zoo.json").read_text())["evaluation_pending"]

    monkeypatch.setattr(cli, "evaluate_model", lambda path, spec: STUB_RESULTS)
    assert cli.main(["eval", "smoke-lora"]) == 0 and published == []  # reading a pending zoo.json completes nothing
    assert cli.main(["eval", "smoke-lora", "--rerun"]) == 0
    assert "result: results/smoke-lora.json" in capsys.readouterr().out and published == ["smoke-lora", "readme"]
    for written in (manifest(final), json.loads((kept / "zoo.json").read_text())):
        assert "evaluation_pending" not in written and written["evaluation"] == STUB_RESULTS
        assert written["targets_reached"] == {
            "toolgym/lookup >= 0.80 correct": False,
            "phantom/lookup-dev composite > keyword": False,
            "storebench/train valid calls >= 0.95": True,
        }
