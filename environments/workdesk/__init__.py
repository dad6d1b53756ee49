"""Workdesk: office tasks over a seeded organisation's shared drive, graded against its evidence graph.

    env = make("workdesk/analyst", seed=3)        # the Q4 revenue brief of organisation 3
    env = make("workdesk/quarter-close", seed=3)  # three occupations' asks composed into one deliverable

See README.md in this folder. Importing the package registers the tasks with their calibrated thresholds
(calibration.json) and declares the lab's view: playable, a file browser whose files open in an editor
(saving calls write_file), the anchors.
"""

from __future__ import annotations

from environments.core import TaskSpec
from environments.meta import Column, EnvMeta, Panel
from environments.registry import register, register_env
from environments.workdesk.anchors import DoNothing, Oracle, ShallowReader
from environments.workdesk.calibration import load_thresholds
from environments.workdesk.env import WorkdeskEnv
from environments.workdesk.rubric import COMPONENTS
from environments.workdesk.tasks import TEMPLATES

_SPLITS = {"analyst": "train", "accountant": "train", "hr": "train", "operations": "dev", "support-lead": "dev", "quarter-close": "test"}
DEFAULT_THRESHOLD = 0.8
_thresholds = load_thresholds()
for _key, (_who, _asks, _deliverable) in TEMPLATES.items():
    register(
        TaskSpec(
            env="workdesk",
            key=_key,
            split=_SPLITS[_key],
            description=f"Work as {_who}: write {_deliverable} from the shared drive.",
            horizon="up to 60 calls",
            pass_threshold=_thresholds.get(_key, DEFAULT_THRESHOLD),
            spec={"template": _key},
        ),
        WorkdeskEnv,
    )

_PANELS = (
    Panel("Files", "list_files", {"show_content": True}, renderer="files", action_tool="write_file", key="f"),
    Panel("Workspace", "list_files", renderer="table", key="w", columns=(Column("path"), Column("kind"), Column("lines"))),
)
register_env(
    EnvMeta(
        env="workdesk",
        calibration="environments.workdesk.calibration",
        playable=True,
        panels=_PANELS,
        shortcuts={"r": "read_file", "s": "search", "c": "calc", "e": "edit_file"},
        anchors={cls.name: cls for cls in (Oracle, ShallowReader, DoNothing)},
        default_anchor="shallow-reader",
        score_components=COMPONENTS,
        graded_by="submit",
        demo_task="operations",
    )
)

__all__ = ["WorkdeskEnv"]
