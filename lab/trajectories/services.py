"""Storing trajectory records as Episode + Step rows, appending live steps, and reading records back.

episodes_ingest(project=p, records=[...], user=u)   # atomic: all stored, or none and a DomainError
episodes_ingest_native(project=p, records=native)    # the same for lab.ingest.read_native's records, streamed (PostgreSQL)
episode_start(project=p, task=t, source="rollout")   # a recorded episode: the server runs it and appends its steps
episode_append_step(episode=e, step={...})           # live rollouts and human play; idempotent by index
episode_to_record(episode)                           # the canonical record, as it was ingested

Provenance is decided here and only here, from how an episode arrived: episode_start (rollouts, play, branches)
records `recorded`; episodes_ingest takes the tier from its caller (`upload`, or `external` for an operator-flagged
API key). A record's header is the sender's word: for any tier but `recorded`, a header that claims a server
source (rollout, human, branch), a parent episode, or a scripted or human agent is stored as an upload with the
claim kept in meta (claimed_source, claimed_parent, claimed_agent) and nothing linked (lab.trajectories.provenance).
A stored header keeps large values its upload's episodes share (a tau2 run's info, an inspect plan, tool schemas)
as references to one SharedContext row each (lab.trajectories.shared); episode_to_record puts them back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from environments import registry
from environments.core import EnvError
from environments.records import AnyHeader, AnyRecord, Header, Record, ScoreDict
from environments.records import Step as RecordStep
from environments.roles import ROLE_NAME
from environments.trajectory import content_hash, normalize_record, validate_record
from lab.errors import Conflict, DomainError
from lab.ingest.native_fast import NativeRecord
from lab.ingest.shared import SharedValues
from lab.live.services import live_publish
from lab.projects.models import Project
from lab.trajectories import bulk
from lab.trajectories.models import AgentConfig, Episode, EpisodeStatus, Provenance, Step, Task
from lab.trajectories.provenance import agent_resolve_external, header_claims
from lab.trajectories.redaction import step_redact
from lab.trajectories.shared import episode_header, shared_contexts_store


@dataclass
class IngestOutcome:
    episode: Episode
    created: bool


def record_error(index: int, path: str, reason: str) -> DomainError:
    return DomainError("invalid_record", f"record {index}: {path}: {reason}", record_index=index, path=path, reason=reason)


def task_resolve(*, project: Project, env: str, key: str, env_version: str = "") -> Task:
    """The project's Task for env/key, created on first use (with the registry's description when it knows it)."""
    task = Task.objects.filter(project=project, env=env, key=key, env_version=env_version).first()
    if task is not None:
        return task
    defaults: dict[str, Any] = {}
    try:
        spec = registry.get_task(f"{env}/{key}")
        defaults = {"split": spec.split, "description": spec.description, "pass_threshold": spec.pass_threshold, "spec": spec.spec}
    except EnvError:
        pass
    task, _ = Task.objects.get_or_create(project=project, env=env, key=key, env_version=env_version, defaults=defaults)
    return task


def _parse_time(value: Any, index: int, path: str) -> datetime | None:
    if value in (None, ""):
        return None
    try:
        parsed = parse_datetime(str(value)) if isinstance(value, str) else None
    except ValueError:  # well formed but impossible, such as February 30
        parsed = None
    if parsed is None:
        raise record_error(index, path, f"{value!r} is not an ISO 8601 date-time")
    return parsed


def _prepare(index: int, record: Record, *, validated: bool, digest: str | None) -> tuple[Record, str]:
    if not validated:
        errors = validate_record(record, max_steps=settings.PRACTICUM_MAX_STEPS_PER_EPISODE)
        if errors:
            raise record_error(index, errors[0].path.removeprefix("record."), errors[0].reason)
    elif len(record["steps"]) > settings.PRACTICUM_MAX_STEPS_PER_EPISODE:
        raise record_error(
            index, "steps", f"at most {settings.PRACTICUM_MAX_STEPS_PER_EPISODE} steps per episode, got {len(record['steps'])}"
        )
    for step in record["steps"]:
        role = step.get("role")
        if role is not None and not (isinstance(role, str) and ROLE_NAME.fullmatch(role)):
            raise record_error(index, f"steps[{step.get('index')}].role", f"{role!r} is not a role name (lowercase, {ROLE_NAME.pattern})")
    if validated and all(step.keys() >= bulk.STEP_DEFAULT_SET for step in record["steps"]):
        # lab.ingest's steps carry every field already and nothing here changes them, so its hash stands.
        return record, digest or content_hash(record)
    normalized = normalize_record(record)
    return normalized, content_hash(normalized)


class _Resolver:
    """Tasks and agents named by an upload's headers, each looked up once per upload rather than per record."""

    def __init__(self, project: Project, provenance: str) -> None:
        assert provenance in Provenance.values, f"unknown provenance {provenance!r}"
        self.project = project
        self.provenance = provenance
        self.trusted = provenance == Provenance.RECORDED  # only then is the header's word on source, parent and agent taken
        self.tasks: dict[tuple[str, str, str], Task] = {}
        self.agents: dict[str, AgentConfig | None] = {}
        self.shared = SharedValues()  # the upload's shared header values, by digest

    def task(self, header: AnyHeader) -> Task:
        key = (header["env"], header["task"], str(header.get("env_version", "")))
        if key not in self.tasks:
            self.tasks[key] = task_resolve(project=self.project, env=key[0], key=key[1], env_version=key[2])
        return self.tasks[key]

    def agent(self, policy: dict[str, Any]) -> AgentConfig | None:
        key = json.dumps(policy, sort_keys=True, default=str)
        if key not in self.agents:
            self.agents[key] = agent_resolve_external(project=self.project, policy=policy, trusted=self.trusted)
        return self.agents[key]


def _preload_tasks(resolver: _Resolver, headers: Sequence[AnyHeader]) -> None:
    """The upload's tasks that exist already, in one query rather than one per task (the constraint makes each unique)."""
    wanted = {(h["env"], h["task"], str(h.get("env_version", ""))) for h in headers}
    for task in Task.objects.filter(project=resolver.project, env__in={w[0] for w in wanted}, key__in={w[1] for w in wanted}):
        if (task.env, task.key, task.env_version) in wanted:
            resolver.tasks[(task.env, task.key, task.env_version)] = task


def _episode_from_header(resolver: _Resolver, index: int, record: AnyRecord, digest: str, raw: Any, user: Any) -> Episode:
    project = resolver.project
    header = record["header"]
    agent = resolver.agent(header.get("policy") or {})
    stored, refs, _ = resolver.shared.factor(header)
    meta: dict[str, Any] = {"header": stored, "shared": refs} if refs else {"header": header}
    if not resolver.trusted:  # an upload or an external report: source `upload`, no parent, its claims kept aside
        meta.update(header_claims(header, agent))
        return _episode(resolver, index, record, digest, raw, user, agent=agent, source="upload", parent=None, branch_step=None, meta=meta)
    parent = None
    parent_ref = header.get("parent") or {}
    if parent_ref.get("episode_id") is not None:
        parent_id = _int_or_none(parent_ref["episode_id"])
        parent = Episode.objects.filter(project=project, pk=parent_id).first() if parent_id is not None else None
        if parent is None:
            raise record_error(index, "header.parent.episode_id", f"no episode {parent_ref['episode_id']!r} in this project")
        if parent_ref.get("branch_step") is not None and parent_ref["branch_step"] >= parent.step_count:
            raise record_error(index, "header.parent.branch_step", f"episode {parent.pk} has no step {parent_ref['branch_step']}")
    return _episode(
        resolver,
        index,
        record,
        digest,
        raw,
        user,
        agent=agent,
        source=header["source"],
        parent=parent,
        branch_step=parent_ref.get("branch_step") if parent else None,
        meta=meta,
    )


# Header fields that have their own Episode column. The full header is also kept in meta["header"], so a
# record comes back exactly as it went in; the columns are there to filter and sort on.
def _episode(
    resolver: _Resolver,
    index: int,
    record: AnyRecord,
    digest: str,
    raw: Any,
    user: Any,
    *,
    agent: AgentConfig | None,
    source: str,
    parent: Episode | None,
    branch_step: int | None,
    meta: dict[str, Any],
) -> Episode:
    header = record["header"]
    score = header.get("score") or None
    return Episode(
        project=resolver.project,
        task=resolver.task(header),
        agent=agent,
        seed=header.get("seed"),
        source=source,
        provenance=resolver.provenance,
        parent=parent,
        branch_step=branch_step,
        status=EpisodeStatus.FINISHED,
        termination_reason=header.get("termination_reason") or "",
        score=score,
        composite=score.get("composite") if score else None,
        passed=score.get("passed") if score else None,
        reward=header.get("reward"),
        started_at=_parse_time(header.get("started_at"), index, "header.started_at"),
        ended_at=_parse_time(header.get("ended_at"), index, "header.ended_at"),
        metrics=header.get("metrics") or {},
        meta=meta,
        raw=raw,
        content_hash=digest,
        step_count=len(record["steps"]),
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )


def _int_or_none(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def episodes_ingest(
    *,
    project: Project,
    records: list[Record],
    raws: list[Any] | None = None,
    user: Any = None,
    validated: bool = False,
    hashes: list[str] | None = None,
    provenance: str = Provenance.UPLOAD,
) -> list[IngestOutcome]:
    """Store records atomically. A record whose content is already stored returns the existing episode.

    `provenance` is the caller's, never the records': `upload` for the API, `external` for an operator-flagged
    key, `recorded` only for records the server itself produced (the header is then taken at its word).

    `validated=True` skips the record checks for records that lab.ingest has just validated; `hashes` are
    their content hashes, computed there already.
    """
    if len(records) > settings.PRACTICUM_MAX_RECORDS_PER_UPLOAD:
        raise DomainError("too_many_records", f"at most {settings.PRACTICUM_MAX_RECORDS_PER_UPLOAD} records per upload, got {len(records)}")
    digests = hashes if validated and hashes is not None else [None] * len(records)
    prepared = [
        _prepare(i, record, validated=validated, digest=digest) for i, (record, digest) in enumerate(zip(records, digests, strict=True))
    ]
    resolver = _Resolver(project, provenance)
    raws = raws if raws is not None else [None] * len(records)
    outcomes: list[IngestOutcome | None] = [None] * len(records)
    with transaction.atomic():
        existing = dict(
            Episode.objects.filter(project=project, content_hash__in=[digest for _, digest in prepared]).values_list("content_hash", "pk")
        )
        _preload_tasks(resolver, [record["header"] for record, _ in prepared])
        new_episodes: list[Episode] = []
        new_positions: list[int] = []
        first_position: dict[str, int] = {}
        for i, (record, digest) in enumerate(prepared):
            if digest in existing or digest in first_position:
                continue  # the same content twice in one upload is stored once
            first_position[digest] = i
            new_episodes.append(_episode_from_header(resolver, i, record, digest, raws[i], user))
            new_positions.append(i)
        created = bulk.insert_episodes(new_episodes)
        shared_contexts_store(project=project, values=resolver.shared, episodes=created)
        pairs = [(ep.pk, step) for ep, i in zip(created, new_positions, strict=True) for step in prepared[i][0]["steps"]]
        if not pairs:
            pass
        elif connection.vendor == "postgresql":
            # Rows made while COPY streams: the server stores one batch while the next is formatted.
            bulk.copy_steps(bulk.copy_row(episode_id, step) for episode_id, step in pairs)
        else:
            bulk.insert_steps([bulk.step_row(episode_id, step) for episode_id, step in pairs])
        by_hash = {ep.content_hash: ep for ep in created}
        missing = [digest for digest in existing if digest not in by_hash]
        by_hash.update({ep.content_hash: ep for ep in Episode.objects.filter(project=project, content_hash__in=missing)})
        for i, (_, digest) in enumerate(prepared):
            outcomes[i] = IngestOutcome(episode=by_hash[digest], created=first_position.get(digest) == i)
    return [o for o in outcomes if o is not None]


class _NotForTheFastPath(Exception):
    """A record of a native upload that the general path must judge; raised inside the transaction, so nothing stays."""


def episodes_ingest_native(
    *, project: Project, records: list[NativeRecord], user: Any = None, provenance: str = Provenance.UPLOAD
) -> list[IngestOutcome] | None:
    """Store a native upload read by lab.ingest.native_fast on PostgreSQL; None if the general path must take it.

    The same result as episodes_ingest, in another order, so that PostgreSQL stores the steps while Python
    reads them: one COPY streams each record's steps (under episode ids drawn beforehand) while the next
    record is decoded, checked and hashed; then the steps of content already stored, or met earlier in the
    upload, are deleted, and the other episodes are COPYed. Their steps' check waits for the commit (migration
    trajectories 0002, as a deferred foreign key would). The steps COPY is the longest part of an upload, and
    the database's side of it (indexes, checks) now runs beside the Python work instead of after it.
    """
    if connection.vendor != "postgresql" or len(records) > settings.PRACTICUM_MAX_RECORDS_PER_UPLOAD:
        return None
    resolver = _Resolver(project, provenance)
    headers = [record.header for record in records]
    try:
        with transaction.atomic():
            # Tasks and agents are looked up (or made) before the COPY, which leaves no room for other queries;
            # the episodes are then made inside it, record by record, unless one names a parent to look up.
            _preload_tasks(resolver, headers)
            for header in headers:
                resolver.task(header)
                resolver.agent(header.get("policy") or {})
            ids = bulk.draw_episode_ids(len(records))
            episodes: list[Episode | None] = [None] * len(records)
            if resolver.trusted and any((header.get("parent") or {}).get("episode_id") is not None for header in headers):
                episodes = [_native_episode(resolver, i, record, ids[i], user) for i, record in enumerate(records)]
            bulk.copy_steps(_native_rows(resolver, records, ids, user, episodes))
            made = [episode for episode in episodes if episode is not None]
            stored = {
                ep.content_hash: ep for ep in Episode.objects.filter(project=project, content_hash__in=[e.content_hash for e in made])
            }
            first: dict[str, Episode] = {}  # the episode kept for each new content
            for episode in made:
                if episode.content_hash not in stored:
                    first.setdefault(episode.content_hash, episode)
            repeated = [episode.pk for episode in made if first.get(episode.content_hash) is not episode]
            if repeated:
                Step.objects.filter(episode_id__in=repeated).delete()
            bulk.copy_episodes(list(first.values()))
            shared_contexts_store(project=project, values=resolver.shared, episodes=first.values())
    except _NotForTheFastPath:
        return None
    outcomes = []
    for episode in made:
        kept = first.get(episode.content_hash)
        if kept is episode:
            outcomes.append(IngestOutcome(episode=episode, created=True))
        else:  # stored before this upload, or earlier in it
            outcomes.append(IngestOutcome(episode=stored.get(episode.content_hash) or kept or episode, created=False))
    return outcomes


def _native_episode(resolver: _Resolver, index: int, record: NativeRecord, pk: int, user: Any) -> Episode:
    episode = _episode_from_header(resolver, index, {"header": record.header, "steps": ()}, "", None, user)
    episode.pk = pk
    return episode


def _native_rows(
    resolver: _Resolver, records: list[NativeRecord], ids: list[int], user: Any, episodes: list[Episode | None]
) -> Iterator[tuple[Any, ...]]:
    """COPY rows, record after record. Each record's episode is made here (unless `episodes` holds it already),
    given its content hash and step count, and put in `episodes`."""
    for i, record in enumerate(records):
        steps = record.steps()
        if steps is None or len(steps) > settings.PRACTICUM_MAX_STEPS_PER_EPISODE:
            raise _NotForTheFastPath
        episode = episodes[i] or _native_episode(resolver, i, record, ids[i], user)
        episode.content_hash = record.content_hash(steps)
        episode.step_count = len(steps)
        episodes[i] = episode
        for step in steps:
            yield bulk.native_copy_row(ids[i], step)


# --- live episodes -------------------------------------------------------------------------------------------


def episode_start(
    *,
    project: Project,
    task: Task,
    source: str,
    seed: int | None,
    agent: AgentConfig | None = None,
    header: Header | None = None,
    user: Any = None,
    parent: Episode | None = None,
    branch_step: int | None = None,
) -> Episode:
    """A running episode that steps will be appended to (rollouts, human play, branches): `recorded`, since
    the server runs it. Its callers are the server's recorders only, never an API that takes a payload."""
    if parent is not None and parent.project_id != project.pk:
        raise DomainError("cross_project", "a branch must stay in its parent's project", status=404)
    if parent is not None and branch_step is not None and branch_step > parent.step_count:
        raise DomainError("invalid_step", f"episode {parent.pk} has no step {branch_step}")
    header = header.copy() if header is not None else {}
    header.setdefault("env", task.env)
    header.setdefault("task", task.key)
    header.setdefault("seed", seed)
    header["source"] = source
    with transaction.atomic():
        episode = Episode.objects.create(
            project=project,
            task=task,
            agent=agent,
            seed=seed,
            source=source,
            provenance=Provenance.RECORDED,  # only the server's own recorders start episodes here
            status=EpisodeStatus.RUNNING,
            parent=parent,
            branch_step=branch_step,
            meta={"header": header},
            started_at=timezone.now(),
            created_by=user if getattr(user, "is_authenticated", False) else None,
        )
        live_publish(stream=f"episode:{episode.pk}", kind="status", payload={"status": episode.status})
    return episode


def episode_append_step(*, episode: Episode, step: RecordStep) -> Step:
    """Append the next step. Appending an index that exists with the same content returns it (a retried
    write after a crash); different content at a taken index is a Conflict (two writers forking one episode)."""
    index = step.get("index")
    with transaction.atomic():
        locked = Episode.objects.select_for_update().get(pk=episode.pk)
        if locked.status != EpisodeStatus.RUNNING:
            raise Conflict("episode_closed", f"episode {locked.pk} is {locked.status}; no more steps can be added")
        # The same redaction as uploads, before anything is compared, stored or published.
        first_redacted = locked.meta.get("first_redacted_step")
        step, redactions = step_redact(
            step=step, after_redacted_step=first_redacted is not None and isinstance(index, int) and index > first_redacted
        )
        if isinstance(index, int) and index < locked.step_count:
            existing = Step.objects.get(episode=locked, index=index)
            if _step_to_dict(existing) == normalize_record({"header": {}, "steps": [step]})["steps"][0]:
                return existing
            raise Conflict("step_taken", f"step {index} of episode {locked.pk} is already taken", index=index)
        if index != locked.step_count:
            raise DomainError("invalid_step", f"expected step index {locked.step_count}, got {index!r}")
        errors = validate_record(
            {
                "schema_version": "practicum.trajectory/1",
                "header": {"env": "x", "task": "x", "source": "rollout"},
                "steps": [{**step, "index": 0}],
            }
        )
        if errors:
            raise DomainError("invalid_step", str(errors[0]).replace("steps[0]", f"step {index}"))
        full = normalize_record({"header": {}, "steps": [step]})["steps"][0]
        row = Step.objects.create(**bulk.step_row(locked.pk, full))
        Episode.objects.filter(pk=locked.pk).update(step_count=index + 1)
        episode.step_count = index + 1
        if redactions and first_redacted is None:
            episode.meta = {**locked.meta, "first_redacted_step": index}
            Episode.objects.filter(pk=locked.pk).update(meta=episode.meta)
        live_publish(stream=f"episode:{locked.pk}", kind="step", payload=_step_to_dict(row))
    return row


def episode_finish(
    *,
    episode: Episode,
    reason: str,
    score: ScoreDict | None = None,
    reward: float | None = None,
    cause: dict[str, str] | None = None,
    header: Header | None = None,
) -> Episode:
    """End the episode. `cause`: why it failed ({"type", "message"} of the exception), kept in the header and the
    metrics so the episode's page and the API say what went wrong; the caller has removed any secrets from it.
    `header`: fields the runner knows only at the end (a team's per-role accounting, "roles"), added to the header."""
    with transaction.atomic():
        episode.mark_finished(reason=reason, score=score, reward=reward)
        stored = {**episode.meta.get("header", {}), **(header or {})}
        stored.update(
            {
                "termination_reason": reason,
                "score": score,
                "reward": reward,
                "ended_at": episode.ended_at.isoformat() if episode.ended_at else None,
            }
        )
        if cause is not None:
            stored["termination_cause"] = cause
            episode.metrics = {**(episode.metrics or {}), "termination_cause": cause}
        episode.meta = {**episode.meta, "header": stored}
        episode.save(update_fields=["meta", "metrics"])
        live_publish(
            stream=f"episode:{episode.pk}",
            kind="status",
            payload={
                "status": episode.status,
                "life_cycle": episode.life_cycle,
                "termination_reason": reason,
                "composite": episode.composite,
                "passed": episode.passed,
            },
        )
    return episode


# --- reading back ------------------------------------------------------------------------------------------------


def _step_to_dict(step: Step) -> RecordStep:
    data = {column: getattr(step, column) for column in bulk.STEP_COLUMNS}
    for column in bulk.STEP_OPTIONAL_COLUMNS:
        if not data[column]:
            del data[column]  # absent in the record it came from
    data.update(step.extra or {})
    return cast(RecordStep, data)  # the columns and extra of a step stored from a validated record


def episode_steps_as_dicts(episode: Episode, *, start: int = 0, stop: int | None = None) -> list[RecordStep]:
    steps = Step.objects.filter(episode=episode, index__gte=start)
    if stop is not None:
        steps = steps.filter(index__lt=stop)
    return [_step_to_dict(s) for s in steps.order_by("index")]


def episode_to_record(episode: Episode, *, header: Header | None = None) -> Record:
    """The record as it was stored. `header`: the episode's, already read with others' (shared.episodes_with_headers)."""
    header = header if header is not None else episode_header(episode)
    return {"schema_version": "practicum.trajectory/1", "header": header, "steps": episode_steps_as_dicts(episode)}
