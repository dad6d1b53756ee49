"""Run a manage.py command with test-only environments registered first, so a browser test can serve an
environment that exists only in tests/ (the console itself never names one).

    python tests/browser/preload.py tests.lab.play.chatdesk serve --port 8123   # each module's register() is called
"""

from __future__ import annotations

import importlib
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")

if __name__ == "__main__":
    modules, args = sys.argv[1].split(","), sys.argv[2:]
    for name in modules:
        importlib.import_module(name).register()
    from django.core.management import execute_from_command_line

    execute_from_command_line(["manage.py", *args])
