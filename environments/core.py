"""The environment contract every Practicum environment keeps.

An environment is a pure function of (task, seed, action sequence): it owns seeded RNG streams, reads no
wall clock, does no I/O, and answers bad tool input with an error result rather than an exception.

Tools are declared once as `ToolSpec`s; the same spec yields the OpenAI function schema, the MCP tool and
the browser form. Arguments are validated against the spec's JSON Schema by `validate_arguments` before a
tool body runs, so each tool body may trust its inputs.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from abc import ABC, abstractmethod
from dataclasses import asdict, dataclass, field
from typing import Any, cast

from environments.records import Header, ScoreDict, Step

JSON = Any

# Exactly one of these ends every episode. Infrastructure errors are re-run, never scored as agent failures.
TERMINATION_REASONS: tuple[str, ...] = (
    "horizon_reached",  # the scenario ran its full simulated length
    "agent_stop",  # the agent ended the episode itself
    "bankrupt",  # the world ended it (money ran out)
    "max_steps",  # the step cap was hit before the horizon
    "too_many_errors",  # the harness gave up after repeated invalid actions
    "timeout",  # wall-clock limit of the harness
    "context_window_exceeded",
    "cancelled",  # a person stopped it
    "abandoned",  # a human session left unfinished
    "agent_error",  # the policy raised
    "infrastructure_error",  # the worker or a service failed
    "unexpected_error",
)


class EnvError(Exception):
    """A misuse of the environment API itself (not a bad tool call, which is a result)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True)
class ToolSpec:
    """One tool, declared once. `parameters` is a JSON Schema object with additionalProperties false."""

    name: str
    description: str
    parameters: dict[str, Any]
    op_cost: int = 1  # operations it spends from the window's budget
    time_cost_minutes: int = 0  # simulated minutes it takes
    category: str = "general"

    def openai_schema(self) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.description, "parameters": self.parameters},
        }

    def mcp_schema(self) -> dict[str, Any]:
        return {"name": self.name, "description": self.description, "inputSchema": self.parameters}


def tool_schema_hash(tools: list[ToolSpec]) -> str:
    """A short hash of the tool schemas; it goes into every trajectory header."""
    canonical = json.dumps([t.openai_schema() for t in tools], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()[:16]


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str = ""


@dataclass(frozen=True)
class Event:
    """A state change a step caused: the environment's own record, read by credit assignment and diagnosis.

    `op` is "write" for a change and "read" for state a tool looked at, so a dependency graph can link the
    step that wrote an entity to the later steps that read it.
    """

    entity: str
    field: str
    before: JSON = None
    after: JSON = None
    op: str = "write"

    def as_json(self) -> dict[str, Any]:
        """The form a trajectory step stores (its `events` list)."""
        return {"entity": self.entity, "field": self.field, "before": self.before, "after": self.after, "op": self.op}


@dataclass
class Observation:
    text: str
    data: dict[str, Any] = field(default_factory=dict)


@dataclass
class StepResult:
    """What one tool call produced. `content` is the tool result as the agent sees it (JSON-able)."""

    content: JSON
    is_error: bool = False
    reward: float = 0.0
    done: bool = False
    events: list[Event] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)
    termination_reason: str | None = None
    sim_time_start: float | None = None  # simulated minutes since the episode start
    sim_time_end: float | None = None

    def __post_init__(self) -> None:
        assert self.termination_reason is None or self.termination_reason in TERMINATION_REASONS, (
            f"unknown termination reason {self.termination_reason!r}"
        )


@dataclass
class Score:
    """The episode's score. `termination_reason` is the environment's own end reason, None while it has not ended:
    a score without one is no grade (0 by contract, whatever its components measured), and the viewer says so."""

    composite: float  # in [0, 1]
    passed: bool
    components: dict[str, float] = field(default_factory=dict)
    termination_reason: str | None = None
    details: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        assert 0.0 <= self.composite <= 1.0, f"composite {self.composite} outside [0, 1]"

    def to_dict(self) -> ScoreDict:
        return cast(ScoreDict, asdict(self))  # ScoreDict declares these fields


@dataclass(frozen=True)
class TaskSpec:
    """One task of an environment: what `make()` builds and what the lab stores as a Task row."""

    env: str  # e.g. "storebench"
    key: str  # e.g. "supplier-collapse"
    split: str  # train | dev | test
    description: str
    horizon: str = ""  # human-readable length, e.g. "35 days"
    pass_threshold: float = 0.5
    version: str = "1"
    spec: dict[str, Any] = field(default_factory=dict)
    public_seeds: tuple[int, ...] = (0, 1, 2)

    @property
    def id(self) -> str:
        return f"{self.env}/{self.key}"


DEFAULT_MAX_STEPS = 10_000  # the harness' step cap for an environment that declares none


class Env(ABC):
    """Gymnasium-shaped, tool-based environment. Subclasses keep all state in picklable attributes.

    Beyond the abstract methods, the contract has members with defaults an environment overrides when they
    mean something for it: `max_steps` (the harness' step cap), `termination_reason` (why a done episode
    ended) and `status()` (the status line players and models see). What the lab needs besides is declared
    once per environment as metadata (environments.meta).
    """

    name: str = ""
    version: str = "0"  # the current engine; an instance built for an older one carries that version instead
    # Older engines this class still runs exactly, frozen, so that their recorded episodes replay (newest last).
    # An episode is only ever replayed against the version it was recorded with.
    frozen_versions: tuple[str, ...] = ()
    # JSON Schema (the validate_arguments subset) of the per-episode options the environment accepts, such as
    # an attack setting or a reward mode; {} accepts none. Options are part of the record's header, so replay
    # rebuilds the same environment.
    options_schema: dict[str, Any] = {}

    def __init__(self, task: TaskSpec, seed: int, *, options: dict[str, Any] | None = None, version: str | None = None) -> None:
        self.task = task
        self.seed = seed
        if version is not None and version != type(self).version and version not in self.frozen_versions:
            supported = ", ".join((*self.frozen_versions, type(self).version))
            raise EnvError("unsupported_version", f"{self.name} {version!r} is not an engine this installation runs ({supported})")
        self.version = version or type(self).version
        self.options: dict[str, Any] = self._checked_options(options or {})

    def _checked_options(self, options: dict[str, Any]) -> dict[str, Any]:
        if problem := options_problem(self.name, self.options_schema, options):
            raise EnvError("bad_options", problem)
        return dict(options)

    @abstractmethod
    def reset(self) -> Observation:
        """Start the episode for `self.seed`; calling it twice gives the same observation."""

    @abstractmethod
    def tools(self) -> list[ToolSpec]: ...

    @abstractmethod
    def step(self, call: ToolCall) -> StepResult:
        """Apply one tool call. Never raises on bad input: answers with `is_error=True`."""

    @abstractmethod
    def score(self) -> Score:
        """The episode's score from the environment's own state; 0 for unfinished runs."""

    @abstractmethod
    def snapshot(self) -> bytes: ...

    @abstractmethod
    def restore(self, blob: bytes) -> None: ...

    @abstractmethod
    def state_hash(self) -> str:
        """A hash of the full world state; chained per step by the runner."""

    @property
    @abstractmethod
    def done(self) -> bool: ...

    @property
    def max_steps(self) -> int:
        """How many agent steps a harness allows before ending the episode as "max_steps"."""
        return DEFAULT_MAX_STEPS

    @property
    def termination_reason(self) -> str | None:
        """Why the episode ended once `done` (one of TERMINATION_REASONS); None while it runs.

        The default, "horizon_reached", fits an environment whose only end is running its full length."""
        return "horizon_reached" if self.done else None

    def hear(self, role: str, text: str) -> None:
        """A message spoken in the episode reaches the environment: the actor's message to the user, or a role
        slot's reply (environments.replay.heard_by decides which). Conversational environments keep it in their
        state (to judge required statements, confirmations); the default ignores it, so nothing changes for the
        others. Called before the step's state is hashed, by the runner and by replay alike."""
        return None

    def summary(self) -> str:
        """A short recap an LLM harness keeps in context when it trims old turns.

        Free to the model, so it may only restate what the agent has already been shown (its own trail, the
        question asked) or what `status()` shows anyway: never world state a tool call would charge for
        (cash, open orders, tickets). Humans and models see the same things for the same price."""
        return ""

    def status(self) -> dict[str, str]:
        """The status line as labelled parts (clock, budget, day, ...), in display order; {} when there is none.

        Public state only: players see it above the tool forms and models see it with every prompt. Each key
        names its part (the play page uses it as the part's element id), each value is the text shown."""
        return {}

    def attack_report(self) -> dict[str, Any] | None:
        """This episode's attack-axis report (environments.attacks) when its options switch the axis on, else None.

        An environment with an attack axis also puts it into `score().details["attack"]`, which is where it is recorded."""
        return None

    def status_line(self) -> str:
        return " · ".join(self.status().values())

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools() if t.name == name), None)

    def header(self) -> Header:
        return {
            "env": self.name,
            "env_version": self.version,
            "task": self.task.key,
            "task_version": self.task.version,
            "seed": self.seed,
            "tool_schema_hash": tool_schema_hash(self.tools()),
            **({"options": dict(self.options)} if self.options else {}),
        }


def options_problem(env_name: str, schema: dict[str, Any], options: Any) -> str | None:
    """What is wrong with per-episode options for an environment with this options schema (None when they fit)."""
    if not isinstance(options, dict):
        return f"options: expected an object, got {options!r}"[:200]
    if not options:
        return None
    if not schema:
        return f"{env_name} takes no options, got {sorted(map(str, options))}"
    problem = validate_arguments(schema, options)
    return problem.replace("arguments", "options", 1) if problem else None


def chain_hash(previous: str, state_hash: str) -> str:
    """Links one step's state hash to the chain so far; replay compares these."""
    return hashlib.sha256(f"{previous}:{state_hash}".encode()).hexdigest()[:32]


# --- argument validation -------------------------------------------------------------------------------

_MAX_STRING = 2000
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def validate_arguments(schema: dict[str, Any], arguments: Any) -> str | None:
    """Check tool arguments against the subset of JSON Schema our tools use.

    Returns None when valid, else one precise message naming the field and the offending value. Stricter
    than plain JSON Schema where agents cheat or break things: NaN/Infinity, booleans passed as numbers,
    numbers passed as text, control characters and over-long strings are all refused.
    """
    return _check(schema, arguments, "arguments")


def _describe(value: Any) -> str:
    text = json.dumps(value, default=str) if not isinstance(value, float) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _check(schema: dict[str, Any], value: Any, path: str) -> str | None:
    kind = schema.get("type")
    if "enum" in schema and value not in schema["enum"]:
        return f"{path}: {_describe(value)} is not one of {schema['enum']}"
    if kind == "object":
        if not isinstance(value, dict):
            return f"{path}: expected an object, got {_describe(value)}"
        properties: dict[str, Any] = schema.get("properties", {})
        for key in schema.get("required", []):
            if key not in value:
                return f"{path}.{key}: required field is missing"
        if schema.get("additionalProperties", False) is False:
            extra = sorted(set(value) - set(properties))
            if extra:
                return f"{path}: unexpected field(s) {', '.join(map(str, extra))}"
        for key, sub in properties.items():
            if key in value:
                error = _check(sub, value[key], f"{path}.{key}")
                if error:
                    return error
        return None
    if kind == "array":
        if not isinstance(value, list):
            return f"{path}: expected a list, got {_describe(value)}"
        if len(value) > schema.get("maxItems", 100):
            return f"{path}: at most {schema.get('maxItems', 100)} items, got {len(value)}"
        if len(value) < schema.get("minItems", 0):
            return f"{path}: at least {schema['minItems']} items, got {len(value)}"
        for i, item in enumerate(value):
            error = _check(schema.get("items", {}), item, f"{path}[{i}]")
            if error:
                return error
        return None
    if kind == "string":
        if not isinstance(value, str):
            return f"{path}: expected text, got {_describe(value)}"
        limit = schema.get("maxLength", _MAX_STRING)
        if len(value) > limit:
            return f"{path}: at most {limit} characters, got {len(value)}"
        if len(value) < schema.get("minLength", 0):
            return f"{path}: at least {schema['minLength']} characters"
        if _CONTROL_CHARS.search(value):
            return f"{path}: control characters are not allowed"
        if "pattern" in schema and not re.fullmatch(schema["pattern"], value):
            return f"{path}: {_describe(value)} does not match the expected form {schema['pattern']}"
        return None
    if kind == "boolean":
        return None if isinstance(value, bool) else f"{path}: expected true or false, got {_describe(value)}"
    if kind in ("integer", "number"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{path}: expected a number, got {_describe(value)}"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{path}: {value} is not a finite number"
        if kind == "integer" and not (isinstance(value, int) or float(value).is_integer()):
            return f"{path}: expected a whole number, got {_describe(value)}"
        if "minimum" in schema and value < schema["minimum"]:
            return f"{path}: {_describe(value)} is below the minimum {schema['minimum']}"
        if "maximum" in schema and value > schema["maximum"]:
            return f"{path}: {_describe(value)} is above the maximum {schema['maximum']}"
        return None
    return None


# --- policies --------------------------------------------------------------------------------------------


@dataclass
class Action:
    """What a policy does in one step: tool calls and/or a message. `stop` ends the episode (agent_stop).

    LLM policies fill the token fields with the ids they sampled, so on-policy training never re-tokenizes.
    `error` marks output that could not be parsed into calls; the runner records it as an invalid action and
    sends the error back to the policy as the step's result.
    """

    tool_calls: list[ToolCall] = field(default_factory=list)
    message: str | None = None
    reasoning: str | None = None
    stop: bool = False
    error: str | None = None
    token_ids: list[int] | None = None
    logprobs: list[float] | None = None
    prompt_token_ids: list[int] | None = None
    meta: dict[str, Any] = field(default_factory=dict)


class Policy(ABC):
    """Anything that acts: scripted anchors, LLM policies, a human at the browser.

    `history` is the trajectory so far as canonical step dicts (environments.trajectory), beginning with the
    environment's opening observation as a step of source "env". Policies must not mutate it.
    """

    name: str = "policy"
    kind: str = "scripted"  # scripted | hf | vllm | openai | human | external

    @abstractmethod
    def act(self, history: list[Step], tools: list[ToolSpec]) -> Action: ...

    def describe(self) -> dict[str, Any]:
        """What goes into the trajectory header as `policy` (never secrets)."""
        return {"name": self.name, "kind": self.kind}
