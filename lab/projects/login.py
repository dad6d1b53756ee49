"""Sign-in forms (the console's and the admin's) with failed attempts rate-limited (lab.projects.throttle)."""

from __future__ import annotations

from typing import Any

from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth import views as auth_views
from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError
from django.http import HttpResponse

from lab.projects.throttle import auth_account_wait, auth_failure_record, auth_failures_wait

SCOPE = "login"


class _RateLimited:
    """Refuses a username this address failed too often in the last minute; counts each failed attempt."""

    request: Any
    cleaned_data: dict[str, Any]
    retry_after = 0

    def clean(self) -> dict[str, Any]:
        username = str(self.cleaned_data.get("username") or "")
        self.retry_after = auth_account_wait(scope=SCOPE, ident=username)
        if self.retry_after:
            raise ValidationError(
                "Too many failed sign-ins for this account. Try again in %(seconds)d seconds.",
                code="rate_limited",
                params={"seconds": self.retry_after},
            )
        self.retry_after = auth_failures_wait(scope=SCOPE, request=self.request, ident=username)
        if self.retry_after:
            raise ValidationError(
                "Too many failed sign-ins for this username from your address. Try again in %(seconds)d seconds.",
                code="rate_limited",
                params={"seconds": self.retry_after},
            )
        try:
            cleaned: dict[str, Any] = super().clean()  # type: ignore[misc]
        except ValidationError:
            auth_failure_record(scope=SCOPE, request=self.request, ident=username)
            raise
        return cleaned


class LoginForm(_RateLimited, AuthenticationForm):
    pass


class AdminLoginForm(_RateLimited, AdminAuthenticationForm):
    pass


class LoginView(auth_views.LoginView):
    authentication_form = LoginForm

    def form_invalid(self, form: Any) -> HttpResponse:
        response = super().form_invalid(form)
        if form.retry_after:  # the form still shows, with its message; the status tells scripts
            response.status_code = 429
            response["Retry-After"] = str(form.retry_after)
        return response
