"""Screens: an environment whose state is a widget tree (environments.desktop.widgets) can be looked at.

The environment's metadata names the function that renders its tree (`EnvMeta.screen`, "module:function"), so
this module knows no environment: the desktop declares environments.desktop.render:render_png.

    if has_screen(env):
        png = screenshot(env)                                   # the current screen, 1280 x 800 PNG bytes
        step.setdefault("meta", {})[SCREENSHOT_KEY] = sha256    # the record keeps a reference, never the bytes

Screenshots are rendered on demand (a text policy never pays for one). A record refers to a screenshot by the
sha256 of its PNG under `meta.screenshot` of the step after which the screen looked that way; the lab stores the
bytes once per project. The replay chain hashes the tree, not these bytes, which may differ between Pillow builds.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from typing import Any

from environments.meta import load_target
from environments.registry import env_meta

# The screen an environment gets when its root widget does not say its size (the desktop's, 1280 x 800).
SCREEN_WIDTH = 1280
SCREEN_HEIGHT = 800
SCREENSHOT_KEY = "screenshot"
SHA256 = re.compile(r"[0-9a-f]{64}")


def has_screen(env: Any) -> bool:
    """True for an environment that exposes `screen() -> Widget`, the root of its current widget tree."""
    return callable(getattr(env, "screen", None))


def screen_size(env: Any) -> tuple[int, int]:
    """The screen's width and height in pixels: its root's size, SCREEN_WIDTH x SCREEN_HEIGHT when the root has none."""
    root = env.screen()
    return root.bounds[2] or SCREEN_WIDTH, root.bounds[3] or SCREEN_HEIGHT


def screenshot(env: Any, *, scale: float = 1.0) -> bytes:
    assert has_screen(env), f"{type(env).__name__} has no screen() to render"
    if scale == 1.0 and callable(getattr(env, "screenshot_png", None)):
        return bytes(env.screenshot_png())  # the environment's own copy of the screen it last rendered
    target = env_meta(env.name).screen
    assert target, f"{env.name} has a screen() but declares no renderer for it (EnvMeta.screen)"
    render = load_target(target)  # imported on first use: Pillow loads only where a screen is rendered
    return bytes(render(env.screen(), scale=scale))


def png_sha256(png: bytes) -> str:
    return hashlib.sha256(png).hexdigest()


def screenshot_ref(step: Mapping[str, Any]) -> str | None:
    """The screenshot a step refers to: a sha256 hex digest, or None (none, or not a well-formed digest)."""
    meta = step.get("meta")
    ref = meta.get(SCREENSHOT_KEY) if isinstance(meta, Mapping) else None
    return ref if isinstance(ref, str) and SHA256.fullmatch(ref) else None


def asked_for_screenshot(step: Mapping[str, Any]) -> bool:
    """A step one of whose tool results returned a screenshot's digest (the desktop's `observe(screenshot=true)`):
    what a vision policy looked at, which the lab stores so the viewer shows it too."""
    results = step.get("results") or []
    return any(isinstance(r, Mapping) and isinstance(r.get("content"), Mapping) and "screenshot_sha256" in r["content"] for r in results)
