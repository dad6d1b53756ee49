"""A person's play session: an Episode of source=human plus who plays it, in which seat, and how far they are.

The seat (`role`) is "actor" when an expert plays the agent's side (the play page), or an environment's role
slot ("user") when a person plays the user against `agent`, a model or scripted agent of the project (the chat page).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from lab.trajectories.models import AgentConfig, Episode, Task


class HumanSessionQuerySet(models.QuerySet["HumanSession"]):
    def abandon(self) -> int:
        """End these sessions as abandoned by their player, in one UPDATE that leaves last_active_at alone: it keeps
        the moment the player left (a save would stamp now)."""
        return self.update(status=HumanSession.Status.ABANDONED)


class HumanSession(models.Model):
    class Status(models.TextChoices):
        ACTIVE = "active"
        FINISHED = "finished"
        ABANDONED = "abandoned"

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="play_sessions")
    episode = models.OneToOneField(Episode, on_delete=models.CASCADE, related_name="human_session")
    task = models.ForeignKey(Task, on_delete=models.PROTECT)
    seed = models.BigIntegerField()
    status = models.CharField(max_length=12, choices=Status.choices, default=Status.ACTIVE)
    budget_used = models.PositiveIntegerField(default=0, help_text="Operations spent so far.")
    role = models.CharField(max_length=32, default="actor", help_text='The seat the person plays: "actor", or a role slot such as "user".')
    agent = models.ForeignKey(
        AgentConfig,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="chat_sessions",
        help_text="The agent a person in a role slot talks to (empty when the person plays the actor).",
    )
    last_active_at = models.DateTimeField(auto_now=True)
    created_at = models.DateTimeField(auto_now_add=True)

    objects = models.Manager.from_queryset(HumanSessionQuerySet)()

    def __str__(self) -> str:
        return f"{self.user} playing {self.task} seed {self.seed}"

    def mark_ended(self, *, abandoned: bool = False) -> None:
        """The session ends with its episode: finished, or abandoned by its player. Saved with last_active_at (now)."""
        self.status = self.Status.ABANDONED if abandoned else self.Status.FINISHED
        self.save(update_fields=["status", "last_active_at"])
