"""A real console for the browser tests: `manage.py serve` (daphne + websockets) in a subprocess on a
file-backed SQLite database, restartable mid-test, and Debian's chromium driven by playwright.

pytest-django's live_server is WSGI-only (no websockets), so the server here is the same command users run.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SCREENSHOTS = ROOT / "test-output" / "screenshots"


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    if not CHROMIUM.exists():
        for item in items:
            if "browser" in item.keywords:
                item.add_marker(
                    pytest.mark.skip(reason="needs Debian's chromium at /usr/bin/chromium (make browser-deps: apt-get install -y chromium)")
                )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class ConsoleServer:
    """`manage.py serve` on a private database; `restart()` is a real process restart on the same port."""

    def __init__(self, workdir: Path, *, preload: tuple[str, ...] = ()) -> None:
        self.preload = preload  # test-only environment modules the server registers first (tests/browser/preload.py)
        self.workdir = workdir
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {
            **os.environ,
            "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}",
            "PRACTICUM_VAR_DIR": str(workdir / "var"),
            "DJANGO_DEBUG": "false",
            "LOG_LEVEL": "WARNING",
        }
        self.env.pop("DJANGO_SETTINGS_MODULE", None)
        # The console under test runs embedded (its own in-process worker, in-memory broker): with a shared Redis,
        # the test process's worker could take its jobs and run them against the wrong database.
        self.env.pop("REDIS_URL", None)
        self.log = (workdir / "server.log").open("ab")
        self.process: subprocess.Popen[bytes] | None = None
        self.api_key = ""

    def api(self, method: str, path: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
        request = urllib.request.Request(
            f"{self.url}{path}",
            method=method,
            data=json.dumps(body).encode() if body is not None else None,
            headers={"Authorization": f"Bearer {self.api_key}", "Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            data: dict[str, Any] = json.loads(response.read())
            return data

    def manage(self, *args: str) -> str:
        done = subprocess.run([sys.executable, *args], cwd=ROOT, env=self.env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        return done.stdout

    def load(self, state: Path) -> None:
        """Start from a copy of a prepared database and var folder (the session's `migrated_state`/`seeded_state`)."""
        shutil.copy2(state / "db.sqlite3", self.workdir / "db.sqlite3")
        shutil.copytree(state / "var", self.workdir / "var", dirs_exist_ok=True)  # its secret key signs what the database holds

    def start(self, timeout: float = 180.0) -> None:
        """Start the console and wait for /healthz; niced beside a model build on two cores it took over 60 s to
        answer (7 s on an idle machine). A console that never answers is stopped before the error is raised."""
        launcher = ["tests/browser/preload.py", ",".join(self.preload)] if self.preload else ["manage.py"]
        self.process = subprocess.Popen(
            [sys.executable, *launcher, "serve", "--port", str(self.port)],
            cwd=ROOT,
            env=self.env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        self.stop()  # no fixture teardown follows a failed start: the process would outlive the test run
        raise AssertionError(f"the console did not start on {self.url}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


# Every module's console starts from a copy of one migrated (and one seeded) database: migrating and seeding cost
# ~18 s of CPU a module, paid once per session instead.
@pytest.fixture(scope="session")
def migrated_state(tmp_path_factory: Any) -> Path:
    folder = tmp_path_factory.mktemp("migrated")
    ConsoleServer(folder).manage("manage.py", "migrate", "--noinput", "-v", "0")
    return Path(folder)


@pytest.fixture(scope="session")
def seeded_state(tmp_path_factory: Any, migrated_state: Path) -> tuple[Path, str]:
    """(folder, API key): the migrated state with tests/browser/seed.py's project, users, anchor episode and key."""
    server = ConsoleServer(tmp_path_factory.mktemp("seeded"))
    server.load(migrated_state)
    return server.workdir, server.manage("tests/browser/seed.py").split("API_KEY=")[1].strip()


def seeded_console(workdir: Path, seeded_state: tuple[Path, str], *, preload: tuple[str, ...] = ()) -> ConsoleServer:
    """A console (not started) on a copy of the seeded state, with its API key."""
    server = ConsoleServer(workdir, preload=preload)
    server.load(seeded_state[0])
    server.api_key = seeded_state[1]
    return server


@pytest.fixture(scope="module")
def console(tmp_path_factory: Any, seeded_state: tuple[Path, str]) -> Iterator[ConsoleServer]:
    server = seeded_console(tmp_path_factory.mktemp("console"), seeded_state)
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS)
        yield browser
        browser.close()


@pytest.fixture
def shoot() -> Any:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)

    def save(page: Any, name: str) -> Path:
        path = SCREENSHOTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path

    return save
