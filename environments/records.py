"""The trajectory record's types, and one accessor for each value read off it.

    record: Record = run_episode(env, policy)
    record_passed(record), record_composite(record, 0.0), header_components(record["header"])

The shapes are those of environments/trajectory.py (`{"schema_version", "header", "steps"}`, its _STEP_FIELDS
and HEADER_SCHEMA): a record is JSON all the way down, so these are TypedDicts, plain dicts at run time.
msgspec Structs were measured against them (benchmarks/records.py, 200 episodes x 40 steps, medians of 5, a shared
2-core machine): on ingest, decoding bytes straight into Structs took 84-93 ms against 397-425 ms for orjson +
validate_record + normalize_record (x4.5-4.7), but every reader downstream (lab's storage and exports, training's
tokenizers, replay, diagnosis) copies, extends and dumps dicts, and decoding into Structs and then back to dicts
(msgspec.to_builtins) took 304-377 ms (x1.05-1.4). On training's reading of a JSONL file Structs took 201-209 ms
against 344-414 ms for read_records (json per line) and 235-269 ms for orjson into dicts. The ingest edge already
decodes into msgspec Structs where that pays (lab.ingest.native_fast); everywhere else a TypedDict types the same
dict at no run-time cost and changes no behaviour, where Structs would change every reader.

Header and Step are total=False: a header is built field by field (the runner fills in score and
termination_reason at the end) and a step's optional fields appear only when given. Keys a producer adds that
are not declared here (mypy has no `extra_items` yet) have to be declared before they are written through the
types.

Accessors: a score is optional (an unfinished or imported episode may have none, or `null`), so
`header.get("score") or {}` was written out at every reader; `header_score` is that expression, once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NotRequired, Required, TypedDict, cast, overload

StepSource = Literal["agent", "user", "env", "human", "system"]
RecordSource = Literal["rollout", "upload", "human", "branch"]


class ToolCallDict(TypedDict):
    """One tool call of a step (TOOL_CALL_SCHEMA); `arguments` is a string when the model's JSON did not parse."""

    id: str
    name: str
    arguments: dict[str, Any] | str


class ToolResultDict(TypedDict):
    """The answer to one tool call (RESULT_SCHEMA): the observation."""

    call_id: str
    content: Any
    is_error: NotRequired[bool]


class Step(TypedDict, total=False):
    """One decision and what came of it (_STEP_FIELDS). make_step and normalize_record fill in every field
    but prompt_token_ids, timestamp, meta and role, which appear only when given."""

    index: Required[int]
    source: Required[str]  # one of STEP_SOURCES (StepSource); uploads are checked against them, not typed by them
    message: Any  # text, or a list of content parts as the producer sent them
    reasoning: str | None
    tool_calls: list[ToolCallDict]
    results: list[ToolResultDict]
    reward: float | None
    sim_time_start: float | None
    sim_time_end: float | None
    events: list[dict[str, Any]]
    state_hash: str | None
    token_ids: list[int] | None
    logprobs: list[float] | None
    prompt_token_ids: list[int] | None
    latency_ms: float | None
    timestamp: str | None
    meta: dict[str, Any]
    role: str  # absent on an agent step means the actor (environments.roles)


class ScoreDict(TypedDict, total=False):
    """environments.core.Score as the header stores it (Score.to_dict)."""

    composite: float  # in [0, 1]
    passed: bool
    components: dict[str, float]
    termination_reason: str | None
    details: dict[str, Any]


class Header(TypedDict, total=False):
    """HEADER_SCHEMA's fields, and those the runner, the crew and the importers add beside them."""

    env: str
    env_version: str
    task: str
    task_version: str
    seed: int | None
    tool_schema_hash: str | None
    options: dict[str, Any]
    policy: dict[str, Any]  # {name, kind, model, ...}
    harness: dict[str, Any]
    source: str  # one of SOURCES (RecordSource)
    parent: dict[str, Any] | None  # {episode_id, branch_step}
    termination_reason: str | None
    termination_cause: dict[str, Any]  # {type, message} when a policy raised
    score: ScoreDict | None
    reward: float | None
    started_at: str | None
    ended_at: str | None
    tools: list[dict[str, Any]]  # OpenAI function schemas the agent was given
    metrics: dict[str, Any]
    meta: dict[str, Any]
    team: dict[str, Any]  # the crew's roles (environments.roles), when the episode had more than an actor
    roles: dict[str, Any]  # per-role accounting
    workflow: dict[str, Any]  # a workflow episode's stages (environments.workflow)
    ingest: dict[str, Any]  # the lab's ingest notes, left out of content_hash
    relay: list[dict[str, Any]]  # a relay episode's stages, [{task, seed}] (environments.relay)


class Record(TypedDict):
    """One episode: `{"schema_version", "header", "steps"}` (TRAJECTORY_SCHEMA)."""

    schema_version: str
    header: Header
    steps: list[Step]


# What the accessors take: the typed record, or a record still annotated as a plain mapping (JSON just read, or a
# module not yet moved onto the types); at run time both are the same dict.
AnyHeader = Header | Mapping[str, Any]
AnyRecord = Record | Mapping[str, Any]


def header_score(header: AnyHeader) -> ScoreDict:
    """The header's score, or {} when it has none (absent or null)."""
    return cast(ScoreDict, header.get("score") or {})


@overload
def header_composite(header: AnyHeader) -> float | None: ...
@overload
def header_composite(header: AnyHeader, default: float) -> float: ...
def header_composite(header: AnyHeader, default: float | None = None) -> float | None:
    """The score's composite, `default` when the score or its composite is absent."""
    return header_score(header).get("composite", default)


def header_passed(header: AnyHeader) -> bool | None:
    """Whether the episode passed its task; None when it was never scored."""
    return header_score(header).get("passed")


def header_components(header: AnyHeader) -> dict[str, float]:
    """The score's components by name ({} when there are none)."""
    return header_score(header).get("components") or {}


def record_score(record: AnyRecord) -> ScoreDict:
    """header_score of the record's header."""
    return header_score(record["header"])


@overload
def record_composite(record: AnyRecord) -> float | None: ...
@overload
def record_composite(record: AnyRecord, default: float) -> float: ...
def record_composite(record: AnyRecord, default: float | None = None) -> float | None:
    """header_composite of the record's header."""
    return header_score(record["header"]).get("composite", default)


def record_passed(record: AnyRecord) -> bool | None:
    """header_passed of the record's header."""
    return header_score(record["header"]).get("passed")


def call_arguments(call: Mapping[str, Any]) -> dict[str, Any]:
    """A tool call's arguments as a dict: {} when the model's JSON did not parse (recorded as the string it wrote) or
    when there are none, so a reader never calls .get / .items on a string."""
    arguments = call.get("arguments")
    return arguments if isinstance(arguments, dict) else {}
