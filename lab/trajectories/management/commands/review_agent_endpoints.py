"""manage.py review_agent_endpoints: after changing PRACTICUM_ENDPOINTS (or the free-URL settings), disable the
agents whose endpoint is no longer allowed, with the reason, and re-enable those allowed again. Nothing is deleted."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from lab.trajectories.endpoints import agents_review_endpoints


class Command(BaseCommand):
    help = "Disable agents whose endpoint the current settings refuse (reason shown); re-enable those allowed again."

    def handle(self, *args: Any, **options: Any) -> None:
        changed = agents_review_endpoints()
        for agent in changed:
            state = f"disabled: {agent.disabled_reason}" if agent.disabled_reason else "enabled again"
            self.stdout.write(f"{agent.project_id}/{agent.name}: {state}")
        self.stdout.write(f"{len(changed)} agent(s) changed")
