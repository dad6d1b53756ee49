"""The `practicum` console script and where it finds the server: arguments, environment, config file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from lab.trajectories.models import Episode
from practicum_client.cli import main
from practicum_client.config import settings_resolve
from practicum_client.errors import PracticumError
from tests.conftest import make_record


@pytest.fixture
def no_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("PRACTICUM_URL", "PRACTICUM_API_KEY", "PRACTICUM_PROJECT", "PRACTICUM_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("PRACTICUM_STATE_DIR", str(tmp_path / "state"))
    return tmp_path / "config" / "practicum" / "config.toml"


def test_settings_come_from_arguments_then_environment_then_the_config_file(no_settings: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    no_settings.parent.mkdir(parents=True)
    no_settings.write_text('url = "http://file:8000/"\nkey = "prk_file"\nproject = "acme"\n')
    assert settings_resolve() == settings_resolve(url="http://file:8000", key="prk_file", project="acme")
    monkeypatch.setenv("PRACTICUM_API_KEY", "prk_env")
    assert (settings_resolve().url, settings_resolve().key) == ("http://file:8000", "prk_env")
    assert settings_resolve(key="prk_arg").key == "prk_arg"


@pytest.mark.parametrize(
    ("text", "message"),
    [('url = "ftp://x"\nkey = "k"\n', "must start with http"), ('url = "http://x"\n', "no key"), ("colour = 1\n", "unknown key 'colour'"),
     ("url = 3\nkey = 'k'\n", "url must be a string"), ("url = [", "config.toml")],
)  # fmt: skip
def test_a_bad_or_incomplete_config_names_what_is_wrong(no_settings: Path, text: str, message: str) -> None:
    no_settings.parent.mkdir(parents=True)
    no_settings.write_text(text)
    with pytest.raises(PracticumError) as refused:
        settings_resolve()
    assert message in refused.value.message


def test_upload_and_export_from_the_shell(
    live_server: Any,
    server_key: str,
    no_settings: Path,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("PRACTICUM_URL", live_server.url)
    monkeypatch.setenv("PRACTICUM_API_KEY", server_key)
    file = tmp_path / "runs.jsonl"
    file.write_text("".join(json.dumps(make_record(seed=i)) + "\n" for i in range(3)))
    assert main(["upload", str(file), "--format", "auto", "--project", "acme", "--batch-size", "2"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert (answer["episodes"], answer["created"], answer["batches_sent"]) == (3, 3, 2)
    assert sorted(answer["episode_ids"]) == sorted(Episode.objects.values_list("pk", flat=True))
    assert main(["export", str(tmp_path / "out.jsonl"), "--format", "openai", "--filter", "seed=1"]) == 0
    assert json.loads(capsys.readouterr().out)["lines"] == 1
    assert json.loads((tmp_path / "out.jsonl").read_text())["metadata"]["provenance"] == "upload"


def test_a_refusal_exits_1_with_the_servers_code(live_server: Any, no_settings: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", live_server.url, "--key", "prk_nonsense", "upload", __file__]) == 1
    assert capsys.readouterr().err.strip() == "error authentication_failed: Unknown API key."
    assert main(["--url", live_server.url, "--key", "k", "export", "x.jsonl", "--filter", "seed"]) == 1
    assert "--filter 'seed': write NAME=VALUE" in capsys.readouterr().err
    assert main(["upload", "x.jsonl"]) == 1
    assert "no url: pass url=, set PRACTICUM_URL" in capsys.readouterr().err


@pytest.mark.slow
def test_evaluate_waits_with_progress_and_prints_the_figures(
    live_server: Any, server_key: str, celery_worker: Any, no_settings: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--url",
        live_server.url,
        "--key",
        server_key,
        "evaluate",
        "--agent",
        "expert",
        "--task-set",
        "toolgym/lookup",
        "--seeds",
        "0,1",
        "--wait",
        "--timeout",
        "120",
    ]
    assert main(argv) == 0
    captured = capsys.readouterr()
    evaluation = json.loads(captured.out)
    assert (evaluation["status"], evaluation["progress"], evaluation["agent"]) == ("finished", 1.0, "expert")
    assert (evaluation["aggregate"]["episodes"], evaluation["aggregate"]["pass_rate"]) == (2, 1.0) and "100%" in captured.err
