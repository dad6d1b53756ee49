"""`Authorization: Bearer <key>` authentication for project API keys."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from lab.projects.models import ApiKey, hash_key

# Writing last_used_at on every request would turn each read into a write; once a minute is enough to tell.
_LAST_USED_RESOLUTION_S = 60


class ApiKeyAuthentication(authentication.BaseAuthentication):
    keyword = "Bearer"

    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        if not header:
            return None
        scheme, _, raw = header.partition(" ")
        if scheme != self.keyword:
            return None
        raw = raw.strip()
        if not raw:
            raise exceptions.AuthenticationFailed("Bearer header without a key.")
        key = ApiKey.objects.select_related("user", "project").filter(key_hash=hash_key(raw)).first()
        if key is None:
            raise exceptions.AuthenticationFailed("Unknown API key.")
        if not key.is_active:
            raise exceptions.AuthenticationFailed("This API key was revoked.")
        if not key.user.is_active:
            raise exceptions.AuthenticationFailed("The key's user is inactive.")
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > _LAST_USED_RESOLUTION_S:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return key.user, key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
