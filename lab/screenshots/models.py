"""Screenshots, stored once per project by the sha256 of their PNG bytes; steps refer to them by that digest
(`meta.screenshot`, environments.screens), so a screen seen at a hundred steps is stored once."""

from __future__ import annotations

from django.db import models

from lab.projects.models import Project


class Screenshot(models.Model):
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="screenshots")
    sha256 = models.CharField(max_length=64, help_text="Hex sha256 of `png`: how steps refer to it.")
    png = models.BinaryField()
    size = models.PositiveIntegerField(help_text="Bytes of `png`, counted against the project's screenshot budget.")
    width = models.PositiveIntegerField()
    height = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["project", "sha256"], name="unique_screenshot_per_project")]

    def __str__(self) -> str:
        return f"screenshot {self.sha256[:12]} ({self.width}x{self.height}, {self.size} bytes)"
