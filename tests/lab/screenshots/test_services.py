"""Screenshot storage: one row per distinct PNG per project, a byte budget per project, PNG bytes only."""

from __future__ import annotations

import io
from typing import Any

import pytest
from PIL import Image

from lab.errors import DomainError, NotFound
from lab.screenshots.models import Screenshot
from lab.screenshots.services import screenshot_bytes_used, screenshot_png, screenshot_store

pytestmark = pytest.mark.django_db


def png(colour: str, size: tuple[int, int] = (64, 40)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, colour).save(out, "PNG")
    return out.getvalue()


def test_the_same_bytes_are_stored_once_per_project(project_a: Any, project_b: Any) -> None:
    first = screenshot_store(project=project_a, png=png("red"))
    again = screenshot_store(project=project_a, png=png("red"))
    assert again.pk == first.pk and Screenshot.objects.filter(project=project_a).count() == 1
    assert (first.width, first.height, first.size) == (64, 40, len(png("red")))
    assert screenshot_bytes_used(project=project_a) == len(png("red"))
    # Another project keeps its own copy: nothing is shared across projects.
    other = screenshot_store(project=project_b, png=png("red"))
    assert other.pk != first.pk and other.sha256 == first.sha256


def test_the_budget_refuses_new_bytes_but_not_ones_already_held(project_a: Any, project_b: Any, settings: Any) -> None:
    settings.PRACTICUM_SCREENSHOT_BUDGET_BYTES = len(png("red")) + 10
    screenshot_store(project=project_a, png=png("red"))
    with pytest.raises(DomainError) as refused:
        screenshot_store(project=project_a, png=png("blue", (65, 40)))
    assert refused.value.code == "screenshot_budget" and refused.value.status == 413
    assert f"holds {len(png('red'))} bytes" in refused.value.message and "PRACTICUM_SCREENSHOT_BUDGET_BYTES" in refused.value.message
    assert screenshot_store(project=project_a, png=png("red")).size == len(png("red"))  # a repeat costs nothing
    screenshot_store(project=project_b, png=png("blue", (65, 40)))  # each project has its own budget


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("not bytes", "png: not PNG bytes"),
        (b"GIF89a....", "png: not PNG bytes"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 20, "png: unreadable"),
    ],
)
def test_only_png_bytes_are_stored(project_a: Any, data: Any, message: str) -> None:
    with pytest.raises(DomainError, match=message) as refused:
        screenshot_store(project=project_a, png=data)
    assert refused.value.code == "invalid_screenshot" and Screenshot.objects.count() == 0


def test_one_screenshot_may_not_pass_the_size_limit(project_a: Any, settings: Any) -> None:
    settings.PRACTICUM_MAX_SCREENSHOT_BYTES = len(png("red")) - 1
    with pytest.raises(DomainError, match=r"png: \d+ bytes; one screenshot may have at most") as refused:
        screenshot_store(project=project_a, png=png("red"))
    assert refused.value.status == 413


def test_reading_is_scoped_to_the_project(project_a: Any, project_b: Any) -> None:
    shot = screenshot_store(project=project_a, png=png("green"))
    assert screenshot_png(project=project_a, sha256=shot.sha256) == png("green")
    with pytest.raises(NotFound):
        screenshot_png(project=project_b, sha256=shot.sha256)
    with pytest.raises(DomainError, match="is not 64 lowercase hex digits"):
        screenshot_png(project=project_a, sha256=shot.sha256.upper())
