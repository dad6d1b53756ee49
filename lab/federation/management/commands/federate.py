"""manage.py federate: sharing policies, peers and federation rounds from the shell (the same services as the API).

    manage.py federate policy acme --user alice --share adapter,stats --canary catalogue.ref=cnry1234abcd
    manage.py federate peer acme partner partner-lab --user alice          # a name in PRACTICUM_FEDERATION_PEERS
    manage.py federate start acme --user alice --mode fedavg --base-model tiny --participant acme=fedgym/a \
        --participant bravo=fedgym/b --set rounds=2 --run                   # --run: here, with a bar; else the workers
    manage.py federate run 7                                               # run or resume federation 7 here
    manage.py federate list [--project acme]                               # with every export's id (what push takes)
    manage.py federate push acme --user alice --export 12 --peer partner --target bravo   # to the peer's installation
    manage.py federate transfers acme                                      # every push, with the peer's answer
    manage.py federate inbox bravo                                         # what other installations pushed to bravo
    manage.py federate accept 3 --user bob                                 # (or reject) a pending received artifact

--user names the member the action is recorded for; the same roles hold as on the API (the owner sets policies and
peers, pushes, and accepts or rejects what was received; an owner or researcher of every participant project starts
a federation, whose --set received=[3] aggregates accepted received artifacts). Without REDIS_URL there are no
workers this process could hand a federation to (the in-memory queue would end with it), so `start` runs it here
as --run does.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from lab.errors import DomainError
from lab.federation.exchange import artifact_push, received_decide
from lab.federation.models import FederationRound, ReceivedArtifact
from lab.federation.selectors import export_list, federation_list, received_list, transfer_list
from lab.federation.services import federation_create, federation_execute, peer_create, sharing_policy_set
from lab.projects.cli import command_project
from lab.projects.models import ADMIN_ROLES, WRITE_ROLES, Project
from lab.projects.selectors import project_list_all, role_in, user_find


def _pairs(items: list[str], flag: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise CommandError(f"{flag} {item!r}: give KEY=VALUE")
        out[key] = value
    return out


class Command(BaseCommand):
    help = "Federated experience: sharing policies, peers, and federation rounds."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        policy = sub.add_parser("policy", help="record what a project shares (owner)")
        policy.add_argument("project")
        policy.add_argument("--user", required=True)
        policy.add_argument("--share", default="", help="comma list of adapter, skills, stats (empty: nothing)")
        policy.add_argument("--canary", action="append", default=[], help="FIELD=CANARY planted in the project's private data")
        policy.add_argument("--note", default="")
        peer = sub.add_parser("peer", help="declare a peer by an endpoint name the operator declared (owner)")
        peer.add_argument("project")
        peer.add_argument("name")
        peer.add_argument("endpoint")
        peer.add_argument("--user", required=True)
        start = sub.add_parser("start", help="start a federation between projects")
        start.add_argument("project", help="the coordinating project")
        start.add_argument("--user", required=True)
        start.add_argument("--mode", required=True, choices=["local", "fedavg", "skills"])
        start.add_argument("--base-model", required=True)
        start.add_argument("--participant", action="append", default=[], help="PROJECT=TASK, once per participant")
        start.add_argument("--set", action="append", default=[], help="config KEY=VALUE (rounds, local_steps, lora_r, ...)")
        start.add_argument("--name", default="")
        start.add_argument("--run", action="store_true", help="run it here instead of enqueueing it (always so without REDIS_URL)")
        run = sub.add_parser("run", help="run or resume a federation here")
        run.add_argument("id", type=int)
        listing = sub.add_parser("list", help="federations with their per-round metrics")
        listing.add_argument("--project", default="")
        push = sub.add_parser("push", help="push an export to a peer's installation (owner)")
        push.add_argument("project")
        push.add_argument("--user", required=True)
        push.add_argument("--export", required=True, help="the export's id (federate list shows every export with its id)")
        push.add_argument("--peer", required=True, help="the project's peer by name")
        push.add_argument("--target", required=True, help="the project slug on the peer's installation")
        transfers = sub.add_parser("transfers", help="a project's pushes, newest first")
        transfers.add_argument("project")
        inbox = sub.add_parser("inbox", help="what other installations pushed to a project, newest first")
        inbox.add_argument("project")
        for verb in ("accept", "reject"):
            decide = sub.add_parser(verb, help=f"{verb} a pending received artifact (owner)")
            decide.add_argument("id", type=int)
            decide.add_argument("--user", required=True)

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except DomainError as exc:
            raise CommandError(exc.message) from exc

    def _member(self, options: dict[str, Any], project: Project, roles: frozenset[str], action: str) -> Any:
        user = user_find(username=options["user"])
        role = role_in(user=user, project=project) if user else None
        if role not in roles:
            raise CommandError(f"--user {options['user']!r}: a {role or 'non-member'} of {project.slug} may not {action}")
        return user

    def _project(self, slug: str) -> Project:
        return command_project(slug, option="project")

    def _policy(self, options: dict[str, Any]) -> None:
        project = self._project(options["project"])
        user = self._member(options, project, ADMIN_ROLES, "change what the project shares")
        kinds = [k for k in options["share"].split(",") if k]
        policy = sharing_policy_set(
            project=project, kinds=kinds, canaries=_pairs(options["canary"], "--canary"), note=options["note"], user=user
        )
        self.stdout.write(
            f"{project.slug} shares {', '.join(policy.kinds) or 'nothing'}; canaries: {', '.join(sorted(policy.canaries)) or 'none'}"
        )

    def _peer(self, options: dict[str, Any]) -> None:
        project = self._project(options["project"])
        user = self._member(options, project, ADMIN_ROLES, "declare federation peers")
        peer = peer_create(project=project, name=options["name"], endpoint=options["endpoint"], user=user)
        self.stdout.write(f"peer {peer.name} -> {peer.endpoint}")

    def _start(self, options: dict[str, Any]) -> None:
        project = self._project(options["project"])
        user = self._member(options, project, WRITE_ROLES, "start federations")
        participants = [{"project": p, "task": t} for p, t in _pairs(options["participant"], "--participant").items()]
        config: dict[str, Any] = {}
        for key, raw in _pairs(options["set"], "--set").items():
            try:
                config[key] = json.loads(raw)
            except json.JSONDecodeError:
                raise CommandError(f"--set {key}={raw!r}: give a number (received: a list of ids, e.g. [3])") from None
        # Embedded mode: this process's in-memory queue ends with it and the server's worker never sees it.
        here = options["run"] or settings.CELERY_EMBEDDED
        federation = federation_create(
            project=project,
            name=options["name"],
            mode=options["mode"],
            base_model=options["base_model"],
            participants=participants,
            config=config,
            user=user,
            enqueue=not here,
        )
        where = "" if options["run"] else " (no REDIS_URL: running it here)" if here else " (queued for the gpu workers)"
        self.stdout.write(f"federation {federation.pk}: {federation.mode}, {len(federation.participants)} participants{where}")
        if here:
            self._run({"id": federation.pk})

    def _run(self, options: dict[str, Any]) -> None:
        from tqdm import tqdm

        federation = FederationRound.objects.filter(pk=options["id"]).first()
        if federation is None:
            raise CommandError(f"no federation {options['id']}")
        with tqdm(total=int(federation.config.get("rounds", 1)), desc=f"federation {federation.pk}", unit="round") as bar:
            federation = federation_execute(federation_id=federation.pk, on_round=lambda r: bar.update(1))
        self.stdout.write(f"federation {federation.pk}: {federation.status}{' - ' + federation.error if federation.error else ''}")
        self._table(federation)

    def _list(self, options: dict[str, Any]) -> None:
        federations = federation_list(projects=project_list_all(slug=options["project"]))
        for federation in federations[:50]:
            self.stdout.write(f"#{federation.pk} {federation.name} [{federation.project.slug}] {federation.mode} {federation.status}")
            self._table(federation)
            for export in export_list(federation=federation):
                reasons = "; ".join(export.gate.get("reasons") or []) or "by the gate"  # canaries by field, never by value
                verdict = f"refused: {reasons}" if export.refused else "passed the gate"
                self.stdout.write(
                    f"  export {export.pk}: round {export.round}, {export.kind} of {export.project.slug}, {export.bytes} bytes, {verdict}"
                )

    def _push(self, options: dict[str, Any]) -> None:
        project = self._project(options["project"])
        user = self._member(options, project, ADMIN_ROLES, "push artifacts to other installations")
        transfer = artifact_push(
            project=project, export_id=options["export"], peer_name=options["peer"], target=options["target"], user=user
        )
        self.stdout.write(f"transfer {transfer.pk}: {transfer.kind} {transfer.sha256[:12]} ({transfer.bytes} bytes) delivered to "
                          f"{transfer.peer_name}/{transfer.target} as #{transfer.remote_id}")  # fmt: skip

    def _transfers(self, options: dict[str, Any]) -> None:
        for t in transfer_list(projects=[self._project(options["project"])])[:100]:
            answer = f" {t.response_status}" if t.response_status else ""
            self.stdout.write(
                f"#{t.pk} {t.created_at:%Y-%m-%d %H:%M} {t.kind} -> {t.peer_name}/{t.target} {t.status}{answer}"
                f"{' - ' + t.error if t.error else ''}"
            )

    def _inbox(self, options: dict[str, Any]) -> None:
        for r in received_list(projects=[self._project(options["project"])])[:100]:
            self.stdout.write(
                f"#{r.pk} {r.received_at:%Y-%m-%d %H:%M} {r.kind} from {r.sender} ({r.manifest.get('source')}, "
                f"round {r.manifest.get('round')}) {r.sha256[:12]} {r.bytes} bytes: {r.status}"
            )

    def _decide(self, options: dict[str, Any], accept: bool) -> None:
        received = ReceivedArtifact.objects.filter(pk=options["id"]).select_related("project").first()
        if received is None:
            raise CommandError(f"no received artifact {options['id']}")
        user = self._member(options, received.project, ADMIN_ROLES, "decide on received artifacts")
        received = received_decide(received=received, accept=accept, user=user)
        self.stdout.write(f"received artifact {received.pk} ({received.kind} from {received.sender}): {received.status}")

    def _accept(self, options: dict[str, Any]) -> None:
        self._decide(options, accept=True)

    def _reject(self, options: dict[str, Any]) -> None:
        self._decide(options, accept=False)

    def _table(self, federation: FederationRound) -> None:
        for metrics in federation.results:
            shown = {k: v for k, v in metrics.items() if k not in ("mode",)}
            self.stdout.write("  " + ", ".join(f"{k}={v:.3f}" if isinstance(v, float) else f"{k}={v}" for k, v in shown.items()))
