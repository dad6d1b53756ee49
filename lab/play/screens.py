"""The play page's screenshot panel: a session of an environment with a screen records one per step.

    if records_screens(env.name): step = step_screenshot_attach(project=p, step=step, env=env)
    screen_panel(env, episode)      # what templates/play/panels/screenshot.html draws

The panel shows the screen as the episode's last step left it: from the project's screenshot store when that
step refers to one (the browser caches it by digest), else rendered from the environment on the spot (a step
recorded past the screenshot budget, or a role slot's turn), so the player always sees the current screen.
A vision model gets the same picture with every step, so it is no paid read (environments.meta, "screenshot").
"""

from __future__ import annotations

import base64
from typing import Any

from django.urls import reverse

from environments import registry
from environments.core import Env
from environments.screens import has_screen, screen_size, screenshot, screenshot_ref
from lab.trajectories.models import Episode, Step


def records_screens(env_name: str) -> bool:
    """True when the environment's metadata declares a screenshot panel: its sessions keep a screenshot per step."""
    return any(panel.renderer == "screenshot" for panel in registry.env_meta(env_name).panels)


def screen_panel(env: Env, episode: Episode) -> dict[str, Any]:
    if not has_screen(env):
        return {"empty": True}
    width, height = screen_size(env)
    extra = Step.objects.filter(episode=episode, index=episode.step_count - 1).values_list("extra", flat=True).first() or {}
    meta = extra.get("meta") if isinstance(extra, dict) else None
    ref = screenshot_ref({"meta": meta})
    if ref is not None:
        src = f"{reverse('screenshot', args=[ref])}?project={episode.project_id}"
    else:
        src = "data:image/png;base64," + base64.b64encode(screenshot(env)).decode("ascii")
    note = meta.get("screenshot_skipped", "") if isinstance(meta, dict) else ""
    return {"empty": False, "src": src, "stored": ref is not None, "width": width, "height": height, "note": str(note)}
