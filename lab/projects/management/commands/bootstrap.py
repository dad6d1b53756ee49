"""Idempotent first-run set-up: a local admin (credentials printed once) and a default project."""

from __future__ import annotations

import os
import secrets
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from lab.projects.models import Role
from lab.projects.selectors import user_find
from lab.projects.services import membership_set, project_create


class Command(BaseCommand):
    help = "Create the local admin (from DJANGO_SUPERUSER_* or generated) and the default project; safe to run again."

    def handle(self, *args: Any, **options: Any) -> None:
        User = get_user_model()
        username = os.environ.get("DJANGO_SUPERUSER_USERNAME", "admin")
        admin = user_find(username=username)
        if admin is None:
            password = os.environ.get("DJANGO_SUPERUSER_PASSWORD") or secrets.token_urlsafe(12)
            admin = User.objects.create_superuser(username=username, email=os.environ.get("DJANGO_SUPERUSER_EMAIL", ""), password=password)
            shown = "(from DJANGO_SUPERUSER_PASSWORD)" if os.environ.get("DJANGO_SUPERUSER_PASSWORD") else password
            self.stdout.write(self.style.SUCCESS(f"Created the admin user: {username} / {shown}  (shown once; keep it)"))
        project = project_create(name="Default", slug="default", description="The project every new installation starts with.")
        membership_set(project=project, user=admin, role=Role.OWNER)
        self.stdout.write(f"Ready: project '{project.slug}', admin '{username}'.")
