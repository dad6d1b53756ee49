"""A strict Content-Security-Policy on every response (Django 5.2 has no CSP middleware of its own).

Everything the console runs or styles comes from its own origin: vendored scripts and stylesheets in static/,
no inline <script>, <style>, style="" or on*="" anywhere (console.js sets computed widths through the DOM, which a
CSP allows). An injected script tag or handler in a rendered trajectory therefore does not run. Websockets are
named with the request's host, as older browsers do not count ws:// of the same host as 'self'.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.utils.deprecation import MiddlewareMixin

HEADER = "Content-Security-Policy"


def content_security_policy(request: HttpRequest) -> str:
    host = request.get_host()
    directives = {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self' data:",  # Swagger UI and uPlot draw small images as data: URLs
        "font-src": "'self'",
        "connect-src": f"'self' ws://{host} wss://{host}",
        "object-src": "'none'",
        "base-uri": "'self'",
        "form-action": "'self'",
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())


class ContentSecurityPolicyMiddleware(MiddlewareMixin):
    """Sets the policy unless a view set one of its own; runs for sync (WSGI) and async (daphne) requests alike."""

    def process_response(self, request: HttpRequest, response: HttpResponse) -> Any:
        if HEADER not in response:
            response[HEADER] = content_security_policy(request)
        return response
