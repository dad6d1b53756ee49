"""What the lab needs to know about an environment, declared by the environment beside its tasks.

    register_env(EnvMeta(env="storebench", playable=True, panels=(Panel("Inventory", "get_inventory", renderer="table"),),
                         anchors={"smart-triage": SmartTriage}, default_anchor="smart-triage"))
    env_meta("storebench").playable                              # the lab reads this, never the env's name
    EnvMeta(env="toolgym", analyzer="environments.toolgym.analyzer:ToolGymAnalyzer")   # what it provides, named

The package registering an EnvMeta is all a new environment touches: the registry discovers the packages
(environments.registry), and the analyzer, calibration and screen renderer declared here are found through it.

The lab never names an environment: the play page lists the playable ones, shows their panels with the
renderer each panel names, and offers their anchors for evaluation, pivotal search and diagnosis; on a
first run it offers to run the anchors on the `demo_task` an environment names.

How a panel looks is declared here too, as data the lab's generic renderers read: a table's columns, its
sort order and the rules that highlight rows (`Column`, `SortKey`, `Highlight`); a chart's series, each drawn
from every result of a tool this episode has recorded (`Series`: paid for, never read from the world); and
keyboard shortcuts (`Panel.key` opens a panel, `EnvMeta.shortcuts` opens a tool's form).

    Panel("Inventory", "get_inventory", renderer="table", key="i",
          columns=(Column("sku"), Column("days_of_cover", "Days of cover")),
          sort=(SortKey("days_of_cover"),), highlights=(Highlight("days_of_cover", below=3, css="risk"),))
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from environments.attacks import AttackAxis
from environments.core import Env, Policy, validate_arguments
from environments.records import Record
from environments.roles import ACTOR, CONSULTANT, CRITIC, HARNESS, ROLE_NAME

PolicyFactory = Callable[[Env, int], Policy]

# The fixed set of ways the lab can show a tool result; an environment picks one per panel.
#   table   a list of row objects (or an object holding one such list): one column per key
#   text    a string, or an object shown as "key: value" lines
#   json    anything, pretty-printed
#   chart   a list of points over time, [{"t": ..., "<series>": number, ...}, ...] (or an object holding one)
#   chat    a list of messages [{"role": ..., "content": ...}, ...] (or an object holding one)
#   files   a file tree [{"path": ..., "content": ...}, ...] (or an object holding one), each file in an editor
#   image   {"src": a data: URI, "alt": ...}, clickable
#   screenshot  the environment's current screen (environments.screens: an env with `screen()`), not a tool
#           result: a vision model sees it with every step, so a player does too. Clicking it calls the action
#           tool with {"x", "y"} in screen pixels; every step of a session is recorded with its screenshot.
RENDERERS: tuple[str, ...] = ("table", "text", "json", "chart", "chat", "files", "image", "screenshot")
# What a renderer's own control sends to the panel's `action_tool`: a click on the image, a saved file.
ACTION_ARGUMENTS: dict[str, dict[str, Any]] = {
    "image": {"x": 0, "y": 0},
    "files": {"path": "a.txt", "content": ""},
    "screenshot": {"x": 0, "y": 0},
}
# The row classes a highlight rule may set; the console's stylesheet draws each one.
HIGHLIGHT_CLASSES: tuple[str, ...] = ("risk", "warn", "good")
# "?" shows the shortcut help on the play page; keys are single lowercase letters or digits.
_KEY = re.compile(r"[a-z0-9]")
_TARGET = re.compile(r"[A-Za-z_][\w.]*(:[A-Za-z_]\w*)?")  # "package.module" or "package.module:attribute"
_PATH = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")  # a dotted path into a result: "pnl.revenue"


@dataclass(frozen=True)
class Column:
    """One column of a table panel: the row key it shows, its heading (the key itself when empty) and what a
    row without a value shows (`missing`: the rule that left it empty, e.g. "no sales in 14 days")."""

    key: str
    label: str = ""
    missing: str = "—"

    def __post_init__(self) -> None:
        assert _PATH.fullmatch(self.key), f"column {self.key!r}: a key is a name like 'days_of_cover'"

    @property
    def heading(self) -> str:
        return self.label or self.key


@dataclass(frozen=True)
class SortKey:
    """Rows ordered by one column; `rank` lists values that come first, in that order (e.g. urgency kinds).
    Rows without the value sort last whatever the direction."""

    column: str
    descending: bool = False
    rank: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Highlight:
    """A row whose `column` is below / above a number, or equal to one of `equals`, gets the class `css`.
    Exactly one condition; the first rule that matches a row wins."""

    column: str
    below: float | None = None
    above: float | None = None
    equals: tuple[Any, ...] = ()
    css: str = "risk"

    def __post_init__(self) -> None:
        conditions = (self.below is not None) + (self.above is not None) + bool(self.equals)
        assert conditions == 1, f"highlight on {self.column!r}: give exactly one of below, above, equals (got {conditions})"
        assert self.css in HIGHLIGHT_CLASSES, f"highlight on {self.column!r}: css {self.css!r} is not one of {HIGHLIGHT_CLASSES}"

    def matches(self, value: Any) -> bool:
        if self.equals:
            return any(value == v and type(value) is type(v) for v in self.equals)  # True is not 1 here
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            return False  # a missing or non-numeric value (days of cover with no sales yet) is not a risk
        return value < self.below if self.below is not None else value > (self.above or 0.0)


@dataclass(frozen=True)
class Series:
    """One line of a chart panel: a point (x, y) from every result of `tool` this episode has recorded, so a
    chart shows only what was paid for. With `rows`, each row of the result's list is a point instead."""

    label: str
    tool: str
    y: str
    x: str = "day"
    rows: bool = False

    def __post_init__(self) -> None:
        for name in ("x", "y"):
            value = getattr(self, name)
            assert _PATH.fullmatch(value), f"series {self.label!r}: {name} {value!r} is not a dotted path like 'pnl.revenue'"


@dataclass(frozen=True)
class Panel:
    """One thing a player keeps open: a tool call (charged like any call when opened) and how to show its result.

    Tables may declare `columns` (default: every key), `sort` and `highlights`; charts may declare `series`
    (default: the result itself is a list of points {"t": ..., "<name>": number}); `key` is the panel's
    keyboard shortcut."""

    title: str
    tool: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    renderer: str = "json"
    action_tool: str = ""  # image: called with {"x", "y"} on a click; files: with {"path", "content"} on save
    key: str = ""
    columns: tuple[Column, ...] = ()
    sort: tuple[SortKey, ...] = ()
    highlights: tuple[Highlight, ...] = ()
    series: tuple[Series, ...] = ()

    def __post_init__(self) -> None:
        name = f"panel {self.title!r}"
        assert self.renderer in RENDERERS, f"{name}: renderer {self.renderer!r} is not one of {RENDERERS}"
        assert not self.action_tool or self.renderer in ACTION_ARGUMENTS, (
            f"{name}: only the {', '.join(list(ACTION_ARGUMENTS)[:-1])} and {list(ACTION_ARGUMENTS)[-1]} renderers take an action tool"
        )
        assert not self.key or _KEY.fullmatch(self.key), f"{name}: key {self.key!r} is not one lowercase letter or digit"
        assert self.renderer == "table" or not (self.columns or self.sort or self.highlights), (
            f"{name}: columns, sort and highlights are for the table renderer, not {self.renderer!r}"
        )
        assert self.renderer == "chart" or not self.series, f"{name}: series are for the chart renderer, not {self.renderer!r}"
        if self.columns:
            keys = [c.key for c in self.columns]
            assert len(set(keys)) == len(keys), f"{name}: a column is declared twice in {keys}"
            for used in [s.column for s in self.sort] + [h.column for h in self.highlights]:
                assert used in keys, f"{name}: {used!r} is sorted or highlighted but is not one of its columns {keys}"


@dataclass(frozen=True)
class RoleSlot:
    """A party the environment itself brings into an episode (a simulated user): its name, the policy that fills
    it unless the agent config names another (Team.slots[name]), and what it is for.

    How a slot takes turns (environments.team): after every actor step that carries a message (the actor
    addressing the user), each slot in declaration order acts once on the trajectory so far, with the
    environment's tools. Its Action's message and tool calls are recorded as a step of role `name` and source
    "user" ("human" for a human), and its tool calls reach the environment, so replay re-executes them."""

    name: str
    default: PolicyFactory
    description: str = ""
    # What a model or a human filling the slot is told beyond the trajectory (a simulated user's goal card: the
    # goal, the persona, the facts they know); the environment's own default reads the world instead.
    brief: Callable[[Env], str] | None = None

    def __post_init__(self) -> None:
        assert ROLE_NAME.fullmatch(self.name), f"role slot {self.name!r} is not a role name like 'user'"
        assert self.name not in (ACTOR, CRITIC, CONSULTANT, HARNESS), f"role slot {self.name!r}: that role belongs to the team"


@dataclass(frozen=True)
class ScoreComponent:
    """How the viewer explains one component of the environment's score: what it measures, its weight in the sum
    it enters (`of`: "composite", or a sub-score the measure names), and the tools that move it (the viewer links
    the first step that calls one). No weight where the component enters otherwise (the measure says how)."""

    measures: str
    weight: float | None = None
    of: str = "composite"
    moved_by: tuple[str, ...] = ()
    check: bool | None = None  # a pass/fail check (1 passed, 0 failed); False: a measure, never a pass or a fail; None: by value


@dataclass(frozen=True)
class EnvMeta:
    """An environment's declaration for the lab. Only `env` is required; the defaults describe a batch-only env."""

    env: str
    playable: bool = False  # a human may play it on the play page
    panels: tuple[Panel, ...] = ()  # what a player sees beside the tool forms, in order
    anchors: Mapping[str, PolicyFactory] = field(default_factory=dict)  # scripted policies, by name
    default_anchor: str = ""  # the anchor pivotal search and rule diagnosis use unless told otherwise
    demo_task: str = ""  # a short task (its key) the lab's first-run demo runs every anchor on, so a newcomer sees episodes
    demo_priority: int = 0  # among environments with a demo task, the highest is the demo (then playable ones, then by name)
    model_demo_task: str = ""  # a task (its key) short enough for the packaged small model's live episode in the first-run demo
    attacks: AttackAxis = field(default_factory=AttackAxis)  # the attack axis (environments.attacks); empty when it has none
    roles: tuple[RoleSlot, ...] = ()  # the parties the environment brings (a simulated user), each with its default policy
    shortcuts: Mapping[str, str] = field(default_factory=dict)  # key -> a tool whose form the key opens on the play page
    score_components: Mapping[str, ScoreComponent] = field(default_factory=dict)  # score component -> its explanation
    # What grades an episode, as the viewer's "No grade: the session ended without …" reads: the tool that ends it
    # ("submit") or the world's end ("reaching the horizon"); empty: "… before the environment graded it".
    graded_by: str = ""
    # Marks a message carries for the environment itself (the simulated caller's end-of-call "###STOP###"): recorded
    # and replayed as sent, never shown to a person reading the transcript.
    control_marks: tuple[str, ...] = ()
    # A record of this environment -> world-model training records, one per transition (screen + action -> next
    # screen, canonical records with one trained agent turn); the dataset export's view=worldmodel reads it.
    world_model: Callable[[Record], Iterable[Record]] | None = None
    # What the environment provides besides its tasks, named "module:attribute" (or a module) and imported on first
    # use, so declaring them costs nothing at import and the lab and the CLI find them here, not in a central list:
    analyzer: str = ""  # "module:Class": its step analyzer (environments.analyzers); empty: the generic one
    calibration: str = ""  # "module": its calibrate() and table_markdown() (`python -m environments calibrate`)
    screen: str = ""  # "module:function": renders the env's screen() widget tree to PNG bytes (environments.screens)

    def __post_init__(self) -> None:
        for name, needs_attribute in (("analyzer", True), ("calibration", False), ("screen", True)):
            target = getattr(self, name)
            assert not target or _TARGET.fullmatch(target) and (":" in target) == needs_attribute, (
                f"{self.env}: {name} {target!r} is not {'a module:attribute' if needs_attribute else 'a dotted module'} path"
            )
        assert not self.default_anchor or self.default_anchor in self.anchors, (
            f"{self.env}: default anchor {self.default_anchor!r} is not one of its anchors {sorted(self.anchors)}"
        )
        assert not self.panels or self.playable, f"{self.env}: panels are shown only to players; declare playable=True"
        assert not self.demo_task or self.anchors, f"{self.env}: the demo task {self.demo_task!r} runs the anchors; declare some"
        assert not self.shortcuts or self.playable, f"{self.env}: shortcuts are for players; declare playable=True"
        keys = [p.key for p in self.panels if p.key] + list(self.shortcuts)
        for key in self.shortcuts:
            assert _KEY.fullmatch(key), f"{self.env}: shortcut {key!r} is not one lowercase letter or digit"
        assert len(set(keys)) == len(keys), f"{self.env}: a shortcut key is used twice in {sorted(keys)}"
        names = [slot.name for slot in self.roles]
        assert len(set(names)) == len(names), f"{self.env}: a role slot is declared twice in {names}"

    def keys(self) -> list[dict[str, str]]:
        """Every shortcut, in page order: {"key", "kind": "panel"|"tool", "target": panel index or tool, "label"}."""
        out = [{"key": p.key, "kind": "panel", "target": str(i), "label": f"open {p.title}"} for i, p in enumerate(self.panels) if p.key]
        out += [{"key": k, "kind": "tool", "target": tool, "label": f"the {tool} form"} for k, tool in self.shortcuts.items()]
        return out

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
            if panel.renderer == "screenshot" and not callable(getattr(env, "screen", None)):
                out.append(
                    f"panel {panel.title!r}: the screenshot renderer needs {type(env).__name__}.screen(), the root of its widget tree"
                )
            if panel.renderer == "screenshot" and not self.screen:
                out.append(f"panel {panel.title!r}: the screenshot renderer needs a screen renderer declared (EnvMeta.screen)")
            out += [
                f"panel {panel.title!r}: series {s.label!r} reads {s.tool!r}, not a tool of {self.env}"
                for s in panel.series
                if env.tool(s.tool) is None
            ]
        out += [f"shortcut {key!r}: {tool!r} is not a tool of {self.env}" for key, tool in self.shortcuts.items() if env.tool(tool) is None]
        out += [
            f"score component {name!r}: moved by {tool!r}, not a tool of {self.env}"
            for name, component in self.score_components.items()
            for tool in component.moved_by
            if env.tool(tool) is None
        ]
        out += [
            f"role slot {slot.name!r}: its default builds {type(made).__name__}, not a Policy"
            for slot in self.roles
            if not isinstance(made := slot.default(env, env.seed), Policy)
        ]
        return out


def load_target(target: str) -> Any:
    """The object a declared "module:attribute" target names (the module itself without an attribute)."""
    module, _, attribute = target.partition(":")
    loaded = importlib.import_module(module)
    return getattr(loaded, attribute) if attribute else loaded
