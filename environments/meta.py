"""What the lab needs to know about an environment, declared by the environment beside its tasks.

    register_env(EnvMeta(env="storebench", playable=True, panels=(Panel("Inventory", "get_inventory", renderer="table"),),
                         anchors={"smart-triage": SmartTriage}, default_anchor="smart-triage"))
    env_meta("storebench").playable                              # the lab reads this, never the env's name

The lab never names an environment: the play page lists the playable ones, shows their panels with the
renderer each panel names, and offers their anchors for evaluation, pivotal search and diagnosis.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from environments.attacks import AttackAxis
from environments.core import Env, Policy, validate_arguments

PolicyFactory = Callable[[Env, int], Policy]

# The fixed set of ways the lab can show a tool result; an environment picks one per panel.
#   table   a list of row objects (or an object holding one such list): one column per key
#   text    a string, or an object shown as "key: value" lines
#   json    anything, pretty-printed
#   chart   a list of points over time, [{"t": ..., "<series>": number, ...}, ...] (or an object holding one)
#   chat    a list of messages [{"role": ..., "content": ...}, ...] (or an object holding one)
#   files   a file tree [{"path": ..., "content": ...}, ...] (or an object holding one), each file in an editor
#   image   {"src": a data: URI, "alt": ...}, clickable
RENDERERS: tuple[str, ...] = ("table", "text", "json", "chart", "chat", "files", "image")
# What a renderer's own control sends to the panel's `action_tool`: a click on the image, a saved file.
ACTION_ARGUMENTS: dict[str, dict[str, Any]] = {"image": {"x": 0, "y": 0}, "files": {"path": "a.txt", "content": ""}}


@dataclass(frozen=True)
class Panel:
    """One thing a player keeps open: a tool call (charged like any call when opened) and how to show its result."""

    title: str
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    renderer: str = "json"
    action_tool: str = ""  # image: called with {"x", "y"} on a click; files: with {"path", "content"} on save

    def __post_init__(self) -> None:
        assert self.renderer in RENDERERS, f"panel {self.title!r}: renderer {self.renderer!r} is not one of {RENDERERS}"
        assert not self.action_tool or self.renderer in ACTION_ARGUMENTS, (
            f"panel {self.title!r}: only the {' and '.join(ACTION_ARGUMENTS)} renderers take an action tool"
        )


@dataclass(frozen=True)
class EnvMeta:
    """An environment's declaration for the lab. Only `env` is required; the defaults describe a batch-only env."""

    env: str
    playable: bool = False  # a human may play it on the play page
    panels: tuple[Panel, ...] = ()  # what a player sees beside the tool forms, in order
    anchors: Mapping[str, PolicyFactory] = field(default_factory=dict)  # scripted policies, by name
    default_anchor: str = ""  # the anchor pivotal search and rule diagnosis use unless told otherwise
    attacks: AttackAxis = field(default_factory=AttackAxis)  # the attack axis (environments.attacks); empty when it has none
    roles: tuple[str, ...] = ()  # reserved: the parties an episode may have (defined by the "Agent roles" issue)

    def __post_init__(self) -> None:
        assert not self.default_anchor or self.default_anchor in self.anchors, (
            f"{self.env}: default anchor {self.default_anchor!r} is not one of its anchors {sorted(self.anchors)}"
        )
        assert not self.panels or self.playable, f"{self.env}: panels are shown only to players; declare playable=True"

    def problems(self, env: Env) -> list[str]:
        """What the contract check reports: panels must name the env's tools with arguments those tools accept."""
        out: list[str] = []
        for panel in self.panels:
            spec = env.tool(panel.tool)
            if spec is None:
                out.append(f"panel {panel.title!r}: {panel.tool!r} is not a tool of {self.env}")
            elif problem := validate_arguments(spec.parameters, dict(panel.arguments)):
                out.append(f"panel {panel.title!r}: {problem}")
            action = env.tool(panel.action_tool) if panel.action_tool else None
            if panel.action_tool and action is None:
                out.append(f"panel {panel.title!r}: action tool {panel.action_tool!r} is not a tool of {self.env}")
            elif action is not None and (problem := validate_arguments(action.parameters, ACTION_ARGUMENTS[panel.renderer])):
                out.append(f"panel {panel.title!r}: action tool {panel.action_tool!r} does not take what {panel.renderer} sends: {problem}")
        return out
