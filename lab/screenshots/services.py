"""Storing screenshots and reading them back, scoped to a project.

    shot = screenshot_store(project=p, png=png_bytes)            # deduplicated by sha256; 413 past the budget
    step = step_screenshot_attach(project=p, step=step, env=env)  # the env's current screen, referenced in step.meta
    png = screenshot_png(project=p, sha256=digest)               # NotFound unless this project holds it

One byte budget per project (PRACTICUM_SCREENSHOT_BUDGET_BYTES) counts each distinct PNG once; a screenshot is
also an ingest, so one PNG may not exceed PRACTICUM_MAX_SCREENSHOT_BYTES nor the upload limit. The budget check
and the insert run under a lock on the project row, so two sessions cannot both take the last bytes.
"""

from __future__ import annotations

import io
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum
from PIL import Image, UnidentifiedImageError

from environments.records import Step
from environments.screens import SCREENSHOT_KEY, SHA256, png_sha256, screenshot
from lab.errors import DomainError, NotFound
from lab.projects.models import Project
from lab.screenshots.models import Screenshot

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def screenshot_max_bytes() -> int:
    return min(settings.PRACTICUM_MAX_SCREENSHOT_BYTES, settings.PRACTICUM_MAX_UPLOAD_BYTES)


def _dimensions(png: Any) -> tuple[int, int]:
    """Width and height from the PNG header; a DomainError naming the problem for anything that is not a PNG."""
    if not isinstance(png, bytes) or not png.startswith(PNG_SIGNATURE):
        raise DomainError("invalid_screenshot", "png: not PNG bytes (the file must start with the PNG signature)", path="png")
    if len(png) > screenshot_max_bytes():
        raise DomainError(
            "too_large", f"png: {len(png)} bytes; one screenshot may have at most {screenshot_max_bytes()}", status=413, path="png"
        )
    try:
        with Image.open(io.BytesIO(png)) as image:  # reads the header only
            return image.size
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise DomainError("invalid_screenshot", f"png: unreadable ({exc})", path="png") from None


def screenshot_bytes_used(*, project: Project) -> int:
    return Screenshot.objects.filter(project=project).aggregate(total=Sum("size"))["total"] or 0


def screenshot_store(*, project: Project, png: bytes) -> Screenshot:
    """The project's row for these bytes: the existing one if it holds them already (no budget spent), else a
    new one if the budget allows (else DomainError `screenshot_budget`, 413)."""
    width, height = _dimensions(png)
    digest = png_sha256(png)
    with transaction.atomic():
        existing = Screenshot.objects.filter(project=project, sha256=digest).defer("png").first()
        if existing is not None:
            return existing
        Project.objects.select_for_update().filter(pk=project.pk).first()  # serialises budget checks per project
        used, budget = screenshot_bytes_used(project=project), settings.PRACTICUM_SCREENSHOT_BUDGET_BYTES
        if used + len(png) > budget:
            raise DomainError(
                "screenshot_budget",
                f"project {project.slug} holds {used} bytes of screenshots; {len(png)} more would pass "
                f"its budget of {budget} (PRACTICUM_SCREENSHOT_BUDGET_BYTES)",
                status=413,
            )
        try:
            with transaction.atomic():
                return Screenshot.objects.create(project=project, sha256=digest, png=png, size=len(png), width=width, height=height)
        except IntegrityError:  # stored meanwhile by a session that did not wait for the lock (it found no row)
            return Screenshot.objects.defer("png").get(project=project, sha256=digest)


def step_screenshot_attach(*, project: Project, step: Step, env: Any) -> Step:
    """`step` with the env's current screen stored and referenced in `meta.screenshot`. Past the budget the step
    is kept without it, `meta.screenshot_skipped` saying why: a full budget must not stop a session."""
    meta = dict(step.get("meta") or {})
    try:
        meta[SCREENSHOT_KEY] = screenshot_store(project=project, png=screenshot(env)).sha256
    except DomainError as exc:
        if exc.code not in ("screenshot_budget", "too_large"):
            raise
        meta["screenshot_skipped"] = exc.message
    return {**step, "meta": meta}


def screenshot_png(*, project: Project, sha256: str) -> bytes:
    if not SHA256.fullmatch(sha256):
        raise DomainError("invalid_parameter", f"sha256={sha256[:80]!r} is not 64 lowercase hex digits", path="sha256")
    png = Screenshot.objects.filter(project=project, sha256=sha256).values_list("png", flat=True).first()
    if png is None:
        raise NotFound("not_found", f"No screenshot {sha256} in project {project.slug}.")
    return bytes(png)
