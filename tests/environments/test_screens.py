"""environments.screens: which environments have a screen, and which step references are digests."""

from __future__ import annotations

import hashlib
import io

import pytest
from PIL import Image

from environments.desktop.widgets import Widget
from environments.screens import has_screen, png_sha256, screen_size, screenshot, screenshot_ref


class Screen:
    name = "desktop"  # rendered by the renderer the desktop declares (EnvMeta.screen)

    def screen(self) -> Widget:
        return Widget("desktop", "desktop", "", (0, 0, 640, 400))


def test_an_env_with_a_screen_renders_it_at_its_size() -> None:
    assert has_screen(Screen()) and not has_screen(object())
    assert screen_size(Screen()) == (640, 400)
    png = screenshot(Screen())
    assert Image.open(io.BytesIO(png)).size == (640, 400) and png_sha256(png) == hashlib.sha256(png).hexdigest()


def test_a_screen_without_a_declared_renderer_is_refused_by_name() -> None:
    class Undeclared(Screen):
        name = "no-such-env"

    assert has_screen(Undeclared()) and screen_size(Undeclared()) == (640, 400)
    with pytest.raises(AssertionError, match="no-such-env has a screen"):
        screenshot(Undeclared())


def test_only_a_well_formed_digest_is_a_reference() -> None:
    digest = "ab" * 32
    assert screenshot_ref({"meta": {"screenshot": digest}}) == digest
    for step in (
        {},
        {"meta": None},
        {"meta": "x"},
        {"meta": {"screenshot": digest.upper()}},
        {"meta": {"screenshot": digest + "0"}},
        {"meta": {"screenshot": 7}},
        {"meta": {"screenshot": "../" + digest[3:]}},
    ):
        assert screenshot_ref(step) is None, step
