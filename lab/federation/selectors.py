"""Reads of federation objects, scoped to the projects a caller can see (others answer 404)."""

from __future__ import annotations

from typing import Any

from lab.edge import int_param
from lab.errors import NotFound
from lab.federation.models import ArtifactExport, FederationRound, OutgoingTransfer, Peer, ReceivedArtifact, SharingPolicy
from lab.projects.models import Project


def sharing_policy_current(*, project: Project | int) -> SharingPolicy | None:
    pk = project if isinstance(project, int) else project.pk
    return SharingPolicy.objects.filter(project_id=pk).order_by("-decided_at", "-pk").first()


def sharing_policy_list(*, projects: Any) -> Any:
    return SharingPolicy.objects.filter(project__in=projects).select_related("project", "decided_by")


def peer_list(*, projects: Any) -> Any:
    return Peer.objects.filter(project__in=projects).select_related("project")


def federation_list(*, projects: Any) -> Any:
    return FederationRound.objects.filter(project__in=projects).select_related("project").order_by("-created_at", "-pk")


def federation_list_with_exports(*, projects: Any) -> Any:
    """federation_list with each round's exports (and their projects) loaded alongside."""
    return federation_list(projects=projects).prefetch_related("exports__project")


def federation_get(*, projects: Any, pk: Any) -> FederationRound:
    try:
        return federation_list(projects=projects).get(pk=int_param(pk, name="id", low=1))
    except FederationRound.DoesNotExist:
        raise NotFound("not_found", f"No federation {pk!r} that you can see.") from None


def export_list(*, federation: FederationRound) -> Any:
    return ArtifactExport.objects.filter(federation=federation).select_related("project")


def transfer_list(*, projects: Any) -> Any:
    return OutgoingTransfer.objects.filter(project__in=projects).select_related("project", "pushed_by").order_by("-created_at", "-pk")


def received_list(*, projects: Any) -> Any:
    return ReceivedArtifact.objects.filter(project__in=projects).select_related("project", "decided_by").order_by("-received_at", "-pk")


def received_get(*, projects: Any, pk: Any) -> ReceivedArtifact:
    try:
        return received_list(projects=projects).get(pk=int_param(pk, name="id", low=1))
    except ReceivedArtifact.DoesNotExist:
        raise NotFound("not_found", f"No received artifact {pk!r} that you can see.") from None
