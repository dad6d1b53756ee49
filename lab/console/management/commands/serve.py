"""Serve the console with daphne; in embedded mode the Celery worker runs inside this process.

Here, in the console app, not in projects: before serving it reviews the agents' endpoints (lab.trajectories), and
the app on top of the others may import them all (projects importing trajectories made a cycle)."""

from __future__ import annotations

import os
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand

from lab.projects.selectors import user_find


def open_line(host: str, port: int) -> str:
    """What a newcomer does next: the URL to open and whom to log in as (bootstrap printed the password once)."""
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else (f"[{host}]" if ":" in host else host)  # a bind-all address is no URL
    username = os.environ.get("DJANGO_SUPERUSER_USERNAME", "admin")
    who = f" and log in as {username}" if user_find(username=username) is not None else ""
    return f"Open http://{shown}:{port}/{who}  (API docs at /api/docs/)"


class Command(BaseCommand):
    help = "Serve HTTP + websockets on HOST:PORT (daphne). Embedded mode also starts an in-process Celery worker."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", type=int, default=8000)

    def handle(self, *args: Any, **options: Any) -> None:
        from daphne.cli import CommandLineInterface

        from lab.trajectories.endpoints import agents_review_endpoints

        # The endpoint settings may have changed since the last start: agents they now refuse are disabled, with the reason.
        for agent in agents_review_endpoints(resolve=False):
            self.stdout.write(
                f"agent {agent.name!r}: {('disabled: ' + agent.disabled_reason) if agent.disabled_reason else 'enabled again'}"
            )
        if settings.CELERY_EMBEDDED:
            from lab.celery import start_embedded_worker

            start_embedded_worker()
            self.stdout.write("Celery: embedded worker (in-memory broker, queues cpu+gpu)")
        # Importing every environment takes seconds (15 s on a busy 2-core machine): done here, before the console
        # answers, so that no person's first play page is the one that waits for it.
        from environments import registry

        registry.list_envs()
        self.stdout.write(self.style.SUCCESS(open_line(options["host"], options["port"])))
        self.stdout.flush()  # before daphne takes over: piped to a file or `tee`, the line must not wait in a buffer
        CommandLineInterface().run(["-b", options["host"], "-p", str(options["port"]), "lab.asgi:application"])
