"""`Authorization: Bearer <key>` authentication for project API keys."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request

from lab.projects.models import ApiKey, hash_key
from lab.projects.throttle import auth_failure_record, auth_failures_wait

# Writing last_used_at on every request would turn each read into a write; once a minute is enough to tell.
_LAST_USED_RESOLUTION_S = 60
SCOPE = "api_key"
PREFIX_LENGTH = 10  # ApiKey.prefix: KEY_PREFIX and six characters


class AuthRateLimited(exceptions.Throttled):
    """429 with Retry-After (DRF's handler sets it from `wait`), as {"error": {"code": "rate_limited"}}."""

    default_code = "rate_limited"


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
        prefix = raw[:PREFIX_LENGTH]  # what ApiKey.prefix stores: it names a key without revealing it
        wait = auth_failures_wait(scope=SCOPE, request=request, ident=prefix)
        if wait:
            raise AuthRateLimited(wait=wait, detail="Too many failed API-key attempts from this address.")  # DRF adds when to retry
        failure = self._failure(raw)
        if isinstance(failure, str):
            auth_failure_record(scope=SCOPE, request=request, ident=prefix)
            raise exceptions.AuthenticationFailed(failure)
        key = failure
        now = timezone.now()
        if key.last_used_at is None or (now - key.last_used_at).total_seconds() > _LAST_USED_RESOLUTION_S:
            ApiKey.objects.filter(pk=key.pk).update(last_used_at=now)
        return key.user, key

    @staticmethod
    def _failure(raw: str) -> ApiKey | str:
        """The active key for `raw`, or why there is none."""
        if not raw:
            return "Bearer header without a key."
        key = ApiKey.objects.select_related("user", "project").filter(key_hash=hash_key(raw)).first()
        if key is None:
            return "Unknown API key."
        if not key.is_active:
            return "This API key was revoked."
        if not key.user.is_active:
            return "The key's user is inactive."
        return key

    def authenticate_header(self, request: Request) -> str:
        return self.keyword
