"""A gated export as a federation round leaves it, made in a test without training (the exchange tests push these)."""

from __future__ import annotations

import json
from typing import Any

from lab.federation.models import ArtifactExport, FederationRound
from lab.federation.services import federation_folder
from training.federation.artifacts import Artifact
from training.federation.checks import export_check

SKILL = "To restock an item: call stock(item=<the asked thing>); then call order(item=<the item field of stock's result>)."


def make_export(project: Any, skills: list[str], *, canaries: dict[str, str] | None = None, gate: bool = True) -> ArtifactExport:
    """A skills export of `project` in round 0 of a finished federation, its bytes where rounds keep them; `gate`
    runs the round's gate on it (False: an export recorded as passed whatever it holds, as before a check existed)."""
    artifact = Artifact(
        "skills", json.dumps({"skills": skills}, sort_keys=True).encode(), project.slug, 0, {"skills": len(skills), "redactions": 0}
    )
    federation, _ = FederationRound.objects.get_or_create(project=project, name="home", mode="skills", base_model="tiny", status="finished")
    folder = federation_folder(federation) / "round-000" / "artifacts"
    folder.mkdir(parents=True, exist_ok=True)
    result = export_check(artifact, canaries=canaries or {}) if gate else None
    refused = result is not None and not result.passed
    if not refused:
        (folder / f"{project.slug}-skills.bin").write_bytes(artifact.payload)
    ArtifactExport.objects.filter(federation=federation, round=0, project=project, kind="skills").delete()
    return ArtifactExport.objects.create(
        federation=federation,
        round=0,
        project=project,
        kind="skills",
        manifest=artifact.manifest,
        sha256=artifact.sha256,
        bytes=len(artifact.payload),
        gate=result.as_json() if result else {},
        refused=refused,
    )
