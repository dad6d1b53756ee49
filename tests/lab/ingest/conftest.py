"""Fixture files for the ingest tests, read as the bytes a user would upload."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
TAUBENCH_FILE = "tool-calling-gpt-4o-0.0_range_0-3_user-gpt-4o-llm_0315101500.json"


@pytest.fixture
def fixture_bytes() -> Callable[[str], bytes]:
    return lambda name: (FIXTURES / name).read_bytes()
