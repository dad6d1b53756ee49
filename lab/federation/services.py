"""Federation services: peers, sharing policies, and federation rounds (launch, execute, cancel).

    peer_create(project=p, name="partner", endpoint="partner-lab", user=u)          # a declared endpoint name only
    sharing_policy_set(project=p, kinds=["adapter", "stats"], canaries={"catalogue.ref": "cnry..."}, user=owner)
    fed = federation_create(project=p, name="f1", mode="fedavg", base_model="tiny",
                            participants=[{"project": "acme", "task": "fedgym/a"}, ...], config={"rounds": 2}, user=u)
    federation_execute(federation_id=fed.pk)    # the Celery task's body; a rerun resumes after the last finished round

Callers check the caller's role in the coordinating project (owner or researcher to launch, owner for peers and
policies); federation_create checks it in every participant project too (a project the user cannot see is 404).
Each participant's private records are its finished episodes of its task (the last `holdout_fraction` of them
never trained on: the membership attack's non-members), exported with episode_to_record; training never sees the
ORM. The leakage checks know a task's private facts where its environment declares them
(training.federation.participants.private_facts: fedgym's catalogues), so the gate's attribute inference runs there too.
What a participant exports is limited, at every round, by its latest sharing policy. Artifacts received from
other installations (lab/federation/exchange.py) join a round when its config lists them ("received": [ids]): the
coordinating project's accepted ones, of the kind the mode aggregates.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction

from lab.edge import fields_check, id_param
from lab.errors import DomainError, Forbidden, NotFound
from lab.federation.models import ARTIFACT_KINDS, MODE_KIND, MODES, ArtifactExport, FederationRound, Peer, ReceivedArtifact, SharingPolicy
from lab.federation.selectors import sharing_policy_current
from lab.jobs import TERMINAL, JobStatus
from lab.projects.models import WRITE_ROLES, Project
from lab.projects.selectors import role_in
from lab.runs.paths import model_path_confine, project_checkpoint_dir

log = logging.getLogger(__name__)

MAX_PARTICIPANTS = 8
MAX_RECORDS = 2000  # private episodes read per participant
MAX_CANARIES = 32
MAX_RECEIVED = 32  # received artifacts one federation aggregates
_FIELD = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
INT_LIMITS = {
    "rounds": (1, 20),
    "local_steps": (1, 10_000),
    "lora_r": (1, 256),
    "lora_alpha": (1, 1024),
    "batch_size": (1, 256),
    "utility_episodes": (1, 256),
    "max_turns": (1, 32),
    "max_new_tokens": (1, 2048),
    "probe_records": (1, 256),
    "seed": (0, 2**31),
}
FLOAT_LIMITS = {
    "learning_rate": (1e-7, 1.0),
    "max_advantage": (0.0, 1.0),
    "holdout_fraction": (0.05, 0.5),
    "max_update_norm": (0.0, 1e6),
    "update_norm_factor": (1.0, 1000.0),
}
DEFAULTS: dict[str, Any] = {
    "rounds": 2,
    "local_steps": 4,
    "lora_r": 4,
    "lora_alpha": 16,
    "batch_size": 4,
    "utility_episodes": 4,
    "max_turns": 4,
    "max_new_tokens": 48,
    "probe_records": 8,
    "seed": 0,
    "learning_rate": 1e-3,
    "max_advantage": 1.0,
    "holdout_fraction": 0.25,
    "received": [],
    "max_update_norm": 0.0,
    "update_norm_factor": 3.0,
}
UTILITY_SEED_START = 50_000


def _bad(code: str, field: str, message: str) -> DomainError:
    return DomainError(code, f"{field}: {message}", fields=[field])


# --- peers and policies ---------------------------------------------------------------------------------------


def peer_endpoint_check(endpoint: Any) -> str:
    """The declared peer name `endpoint` stands for (a name, or a URL equal to a declared base URL); else 400."""
    declared: dict[str, dict[str, Any]] = settings.PRACTICUM_FEDERATION_PEERS
    names = ", ".join(sorted(declared)) or "none (the operator declares them in PRACTICUM_FEDERATION_PEERS)"
    if isinstance(endpoint, str) and endpoint in declared:
        return endpoint
    if isinstance(endpoint, str):
        for name, spec in declared.items():
            if endpoint.rstrip("/") == spec["base_url"]:
                return name
    raise DomainError(
        "endpoint_refused", f"endpoint={endpoint!r}: a peer is an endpoint the operator declared; declared: {names}", fields=["endpoint"]
    )


def peer_create(*, project: Project, name: str, endpoint: str, user: Any = None) -> Peer:
    if not isinstance(name, str) or not _FIELD.match(name):
        raise _bad("invalid_name", "name", f"{name!r} is not a peer name (letters, digits, '_', '.', '-'; at most 64)")
    declared = peer_endpoint_check(endpoint)
    if Peer.objects.filter(project=project, name=name).exists():
        raise DomainError("duplicate", f"name: project {project.slug} already has a peer {name!r}", status=409, fields=["name"])
    return Peer.objects.create(
        project=project, name=name, endpoint=declared, created_by=user if getattr(user, "is_authenticated", False) else None
    )


def sharing_policy_set(*, project: Project, kinds: Any, canaries: Any = None, note: str = "", user: Any = None) -> SharingPolicy:
    """Record the owner's decision (a new row; the latest holds)."""
    if not isinstance(kinds, list) or any(k not in ARTIFACT_KINDS for k in kinds) or len(set(kinds)) != len(kinds):
        raise _bad("invalid_kinds", "kinds", f"{kinds!r}: a list of distinct kinds from {', '.join(ARTIFACT_KINDS)}")
    canaries = {} if canaries is None else canaries
    if not isinstance(canaries, dict) or len(canaries) > MAX_CANARIES:
        raise _bad("invalid_canaries", "canaries", f"an object of at most {MAX_CANARIES} field -> canary string")
    for field, value in canaries.items():
        if not _FIELD.match(str(field)):
            raise _bad("invalid_canaries", f"canaries.{field}", "a field name is letters, digits, '_', '.', '-' (at most 64)")
        if not isinstance(value, str) or not 8 <= len(value) <= 200:
            raise _bad("invalid_canaries", f"canaries.{field}", "a canary is a string of 8 to 200 characters")
    fields_check(SharingPolicy, note=note)
    return SharingPolicy.objects.create(
        project=project,
        kinds=list(kinds),
        canaries=dict(canaries),
        note=note,
        decided_by=user if getattr(user, "is_authenticated", False) else None,
    )


# --- launching --------------------------------------------------------------------------------------------------


def _received_id(index: int, value: Any) -> int:
    try:
        return id_param(value, name=f"config.received[{index}]")
    except DomainError:
        raise _bad("invalid_config", f"config.received[{index}]", f"{value!r} is not an id of a received artifact") from None


def federation_config_check(config: Any) -> dict[str, Any]:
    if not isinstance(config, dict):
        raise _bad("invalid_config", "config", f"an object of federation settings, got {type(config).__name__}")
    unknown = sorted(set(config) - set(DEFAULTS))
    if unknown:
        raise _bad("invalid_config", f"config.{unknown[0]}", f"unknown setting; known: {', '.join(DEFAULTS)}")
    out = dict(DEFAULTS)
    for name, value in config.items():
        if name == "received":
            if not isinstance(value, list) or len(value) > MAX_RECEIVED:
                raise _bad("invalid_config", "config.received", f"a list of at most {MAX_RECEIVED} received artifact ids")
            out[name] = [_received_id(i, v) for i, v in enumerate(value)]
            continue
        low, high = INT_LIMITS.get(name) or FLOAT_LIMITS[name]
        number_ok = isinstance(value, int | float) and not isinstance(value, bool) and (name in FLOAT_LIMITS or isinstance(value, int))
        if not number_ok or not low <= value <= high:
            raise _bad(
                "invalid_config",
                f"config.{name}",
                f"{value!r} must be a {'number' if name in FLOAT_LIMITS else 'whole number'} in [{low}, {high}]",
            )
        out[name] = value
    return out


def _participant(index: int, item: Any, *, user: Any, mode: str, projects: Any = None) -> dict[str, Any]:
    from environments.core import EnvError
    from environments.registry import get_task
    from lab.trajectories.selectors import episode_list

    where = f"participants[{index}]"
    if not isinstance(item, dict) or set(item) != {"project", "task"}:
        raise _bad("invalid_participants", where, 'an object {"project": slug, "task": task id}')
    ref, task = item["project"], item["task"]
    lookup = {"pk": int(ref)} if isinstance(ref, int) or str(ref).isdigit() else {"slug": str(ref)}
    # Within what the caller reaches: an API key reaches its own project only, whatever else its user belongs to.
    project = (Project.objects if projects is None else projects).filter(**lookup).first()
    role = role_in(user=user, project=project) if project is not None else None
    if project is None or role is None:
        raise NotFound("not_found", f"{where}.project: no project {ref!r} that you can see", fields=[f"{where}.project"])
    if role not in WRITE_ROLES:
        raise Forbidden(
            "forbidden", f"{where}.project: a {role} of {project.slug} may not enter it into a federation", fields=[f"{where}.project"]
        )
    try:
        get_task(str(task))
    except EnvError:
        raise _bad("unknown_task", f"{where}.task", f"{task!r} is not a registered task") from None
    kind = MODE_KIND.get(mode)
    policy = sharing_policy_current(project=project)
    if kind and (policy is None or kind not in policy.kinds):
        raise _bad("not_shared", f"{where}.project", f"{project.slug}'s sharing policy does not share {kind} (its owner decides)")
    episodes = episode_list(projects=Project.objects.filter(pk=project.pk), filters={"task": task}).exclude(status="running").count()
    if episodes < 2:
        raise _bad("too_few_episodes", f"{where}.task", f"{project.slug} has {episodes} finished {task} episode(s); at least 2")
    return {"project": project.pk, "slug": project.slug, "task": str(task)}


def _received_check(project: Project, mode: str, ids: list[int]) -> None:
    """Each id is an accepted artifact received by the coordinating project, of the kind the mode aggregates."""
    kind = MODE_KIND.get(mode)
    seen: dict[str, int] = {}  # sha256 -> id: a peer that pushed the same bytes twice must not weigh twice
    for i, pk in enumerate(ids):
        where = f"config.received[{i}]"
        received = ReceivedArtifact.objects.filter(project=project, pk=pk).first()
        if received is None:
            raise NotFound("not_found", f"{where}: {project.slug} received no artifact {pk}", fields=[where])
        if received.sha256 in seen and seen[received.sha256] != pk:
            raise _bad(
                "duplicate_artifact",
                where,
                f"received artifact {pk} holds the same bytes as {seen[received.sha256]} (sha256 {received.sha256[:12]}); list one of them",
            )
        seen[received.sha256] = pk
        if received.status != "accepted":
            raise _bad("not_accepted", where, f"received artifact {pk} is {received.status}; an owner accepts it first")
        if received.kind != kind:
            raise _bad(
                "wrong_kind", where, f"received artifact {pk} is {received.kind}; a {mode} federation aggregates {kind or 'nothing'}"
            )
    if len(set(ids)) != len(ids):
        raise _bad("invalid_config", "config.received", "an artifact is listed once")


def federation_create(
    *,
    project: Project,
    name: str,
    mode: str,
    base_model: str,
    participants: Any,
    config: Any = None,
    user: Any = None,
    enqueue: bool = True,
    projects: Any = None,
) -> FederationRound:
    """Validate everything (the caller checked the role in `project`), store the federation queued, enqueue it.
    `projects`: what the caller reaches (the API's visible_projects: a key only its own project); None for every
    project the user belongs to (the management command)."""
    fields_check(FederationRound, name=name, base_model=base_model)
    if mode not in MODES:
        raise _bad("invalid_mode", "mode", f"{mode!r}: one of {', '.join(MODES)}")
    model_path_confine(project=project, value=base_model, field="base_model")
    if not isinstance(participants, list) or not 1 <= len(participants) <= MAX_PARTICIPANTS:
        raise _bad("invalid_participants", "participants", f"a list of 1 to {MAX_PARTICIPANTS} {{project, task}} objects")
    checked = [_participant(i, item, user=user, mode=mode, projects=projects) for i, item in enumerate(participants)]
    if len({p["project"] for p in checked}) != len(checked):
        raise _bad("invalid_participants", "participants", "a project takes part once")
    settings_ = federation_config_check(config or {})
    _received_check(project, mode, settings_["received"])
    federation = FederationRound.objects.create(
        project=project,
        name=name or f"{mode} federation of {len(checked)}",
        mode=mode,
        base_model=base_model,
        participants=checked,
        config=settings_,
        created_by=user if getattr(user, "is_authenticated", False) else None,
    )
    if enqueue:
        transaction.on_commit(lambda: federation_enqueue(federation))
    return federation


def federation_enqueue(federation: FederationRound) -> None:
    from lab.federation.tasks import execute_federation

    execute_federation.apply_async(args=[federation.pk], queue="gpu")


def federation_cancel(*, federation: FederationRound) -> FederationRound:
    """Queued: cancelled at once; running: stops before its next round."""
    with transaction.atomic():
        federation = FederationRound.objects.select_for_update().get(pk=federation.pk)
        if federation.status not in TERMINAL:  # a running one gets its end time when its worker stops
            federation.mark_cancelled(stopping=federation.started_at is not None)
    return federation


# --- execution (the Celery task's body) -------------------------------------------------------------------------


def federation_folder(federation: FederationRound) -> Path:
    return project_checkpoint_dir(federation.project_id) / f"federation-{federation.pk}"


def _participants(federation: FederationRound) -> list[Any]:
    from lab.trajectories.selectors import episode_list
    from lab.trajectories.services import episode_to_record
    from lab.trajectories.shared import episodes_with_headers
    from training.federation.participants import Participant, private_facts

    people = []
    for item in federation.participants:
        projects = Project.objects.filter(pk=item["project"])
        episodes = episode_list(projects=projects, filters={"task": item["task"]}).exclude(status="running").order_by("pk")[:MAX_RECORDS]
        records = [episode_to_record(e, header=header) for e, header in episodes_with_headers(episodes)]
        held = max(1, int(len(records) * float(federation.config["holdout_fraction"])))
        policy = sharing_policy_current(project=item["project"])
        people.append(
            Participant(
                name=item["slug"],
                task=item["task"],
                records=records[:-held],
                holdout=records[-held:],
                canaries=dict(policy.canaries) if policy else {},
                share=tuple(policy.kinds) if policy else (),
                **private_facts(item["task"]),
            )
        )
    return people


def _store_round(federation: FederationRound, r: int, metrics: dict[str, Any], folder: Path) -> None:
    slugs = {item["slug"]: item["project"] for item in federation.participants}
    with transaction.atomic():
        for path in sorted((folder / f"round-{r:03d}" / "artifacts").glob("*.json")):
            saved = json.loads(path.read_text())
            manifest, gate = saved["manifest"], saved["gate"] or {}
            ArtifactExport.objects.update_or_create(
                federation=federation,
                round=r,
                project_id=slugs[manifest["source"]],
                kind=manifest["kind"],
                defaults={
                    "manifest": manifest,
                    "sha256": manifest["sha256"],
                    "bytes": manifest["bytes"],
                    "gate": {**gate, "refused": saved["refused"]},
                    "refused": saved["refused"] is not None,
                },
            )
        results = [m for m in federation.results if m.get("round") != r] + [{k: v for k, v in metrics.items() if k != "models"}]
        federation.results = sorted(results, key=lambda m: m["round"])
        federation.progress = min(1.0, len(federation.results) / int(federation.config["rounds"]))
        FederationRound.objects.filter(pk=federation.pk).update(results=federation.results, progress=federation.progress)


def _round_done(federation: FederationRound, r: int, metrics: dict[str, Any], folder: Path, then: Callable[[int], None] | None) -> None:
    _store_round(federation, r, metrics, folder)
    if then is not None:
        then(r)


def federation_execute(*, federation_id: int, on_round: Callable[[int], None] | None = None) -> FederationRound:
    """Run (or resume) every round; each finished round's metrics and exports are stored as it ends (then on_round(r))."""
    from lab.federation.exchange import received_artifacts
    from training.federation.rounds import FederationSettings, federation_run

    federation = FederationRound.objects.get(pk=federation_id)
    if federation.status in TERMINAL:
        return federation
    rows = FederationRound.objects.filter(pk=federation.pk)
    rows.transition(JobStatus.RUNNING)  # a cancel that came first stays: should_stop then ends it before its first round
    folder = federation_folder(federation)
    c = federation.config
    try:
        base = model_path_confine(project=federation.project, value=federation.base_model, field="base_model")  # again: symlinks move
        if not Path(base, "config.json").is_file():  # else transformers takes the path for a hub repo id and says so, obscurely
            raise FileNotFoundError(
                f"base_model {federation.base_model!r}: no model at {base} (a name is a folder in "
                "PRACTICUM_MODEL_STORE, holding config.json and the weights)"
            )
        settings_ = FederationSettings(
            mode=federation.mode,
            base=base,
            rounds=c["rounds"],
            local_steps=c["local_steps"],
            lora_r=c["lora_r"],
            lora_alpha=c["lora_alpha"],
            learning_rate=c["learning_rate"],
            batch_size=c["batch_size"],
            seed=c["seed"],
            max_turns=c["max_turns"],
            utility_seeds=list(range(UTILITY_SEED_START, UTILITY_SEED_START + c["utility_episodes"])),
            max_new_tokens=c["max_new_tokens"],
            probe_records=c["probe_records"],
            max_advantage=c["max_advantage"],
            max_update_norm=float(c.get("max_update_norm", 0.0)),
            update_norm_factor=float(c.get("update_norm_factor", 3.0)),
        )
        received = received_artifacts(project=federation.project_id, ids=list(c.get("received") or []))
        federation_run(
            _participants(federation),
            settings_,
            out=folder,
            received=received,
            on_round=lambda r, metrics: _round_done(federation, r, metrics, folder, on_round),
            should_stop=lambda: FederationRound.objects.filter(pk=federation.pk, status=JobStatus.CANCELLED).exists(),
        )
    except Exception as exc:  # a worker records every failure on the job, whatever raised it
        log.exception("federation %s failed", federation.pk)
        rows.transition(JobStatus.FAILED, error=f"{type(exc).__name__}: {exc}"[:4000])  # a cancelled one stays cancelled
        federation.refresh_from_db()
        return federation
    if not rows.transition(JobStatus.FINISHED):
        rows.stop_cancelled()
    federation.refresh_from_db()
    return federation
