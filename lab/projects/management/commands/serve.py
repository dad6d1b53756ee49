"""Serve the console with daphne; in embedded mode the Celery worker runs inside this process."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand


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
        self.stdout.write(f"Practicum console on http://{options['host']}:{options['port']}/  (API docs at /api/docs/)")
        CommandLineInterface().run(["-b", options["host"], "-p", str(options["port"]), "lab.asgi:application"])
