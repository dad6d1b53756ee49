"""Desktop: GUI and command-line tasks on a seeded desktop of small apps, with drifting layouts.

    env = make("desktop/reply-mail", seed=3)                            # the reference desktop
    env = make("desktop/buy-cheapest", seed=3, options={"drift": "high"})  # renamed controls, ads, A/B variants

See README.md in this folder. Importing the package registers the tasks (thresholds from calibration.json) and
the lab's view: playable, with a screen panel (the accessibility tree) and a shell panel, the anchors, and the
world-model view of its records (worldmodel.py; the dataset export's view=worldmodel).
"""

from __future__ import annotations

from environments.core import TaskSpec
from environments.desktop.anchors import CliPreferring, Oracle, RandomValid
from environments.desktop.anchors_gui import GuiOnly
from environments.desktop.calibration import load_thresholds
from environments.desktop.env import COMPONENTS, DesktopEnv
from environments.desktop.tasks import TEMPLATES
from environments.desktop.worldmodel import sft_records
from environments.meta import EnvMeta, Panel
from environments.registry import register, register_env

DEFAULT_THRESHOLD = 0.8  # the right final state with no collateral damage scores at least this (grading.py)
_thresholds = load_thresholds()
_DESCRIPTIONS = {
    "move-files": "Move the downloaded files of one kind into their folder.",
    "reply-mail": "Reply to one message with a given text.",
    "change-setting": "Change one setting.",
    "edit-cell": "Edit one cell of a CSV table and save it.",
    "schedule-event": "Add a calendar event.",
    "buy-cheapest": "Buy the cheapest product that meets constraints (and nothing else).",
    "errand": "Move files, change a setting and reply to a message, in one episode.",
}
for _key, (_split, _parts) in TEMPLATES.items():
    register(
        TaskSpec(
            env="desktop",
            key=_key,
            split=_split,
            description=_DESCRIPTIONS[_key],
            horizon="up to 80 calls",
            pass_threshold=_thresholds.get(_key, DEFAULT_THRESHOLD),
            spec={"template": _key},
        ),
        DesktopEnv,
    )

_PANELS = (
    Panel("Screenshot", "observe", renderer="screenshot", action_tool="click", key="p"),  # click on it to click there
    Panel("Screen", "observe", renderer="text", key="o"),  # the accessibility text a text policy reads
    Panel("Home folder", "shell", {"command": "find ~ -type f"}, renderer="text", key="h"),
)
register_env(
    EnvMeta(
        env="desktop",
        analyzer="environments.desktop.analyser:DesktopAnalyser",
        calibration="environments.desktop.calibration",
        screen="environments.desktop.render:render_png",
        playable=True,
        panels=_PANELS,
        shortcuts={"c": "click", "t": "type", "k": "key", "s": "shell"},
        anchors={cls.name: cls for cls in (Oracle, CliPreferring, GuiOnly, RandomValid)},
        default_anchor="gui-only",
        score_components=COMPONENTS,
        graded_by="submit",
        world_model=sft_records,
    )
)

__all__ = ["DesktopEnv"]
