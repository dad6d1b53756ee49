"""Federation over the API: peers, sharing policies, federations and their exports.

    GET  /api/v1/federation/peers/                  POST {"project", "name", "endpoint"}            (owner)
    GET  /api/v1/federation/policies/?project=SLUG  POST {"project", "kinds": [...], "canaries": {field: canary}, "note"}  (owner)
    GET  /api/v1/federation/rounds/                 POST {"project", "name", "mode", "base_model", "participants": [{"project", "task"}], "config"}
    GET  /api/v1/federation/rounds/<id>/exports/    POST /api/v1/federation/rounds/<id>/cancel/
    GET  /api/v1/federation/transfers/              POST {"project", "export": id, "peer": name, "target": slug}  (owner: push)
    GET  /api/v1/federation/received/               POST /api/v1/federation/received/<id>/accept/ (or reject/)  (owner)
    POST /api/v1/federation/inbox/                  another installation's signed push (no session, no key: the signature)

Launching and cancelling need the owner or researcher role in the coordinating project and in every participant
(a project the caller cannot see is 404); peers, policies, pushes and decisions on received artifacts are the
owner's. A policy's canaries are private: answers show their field names only. Bad input is 400 {"error": {"code",
"message", "fields"}} naming the field; a push the peer refused or could not take is 502 naming the peer's answer
(lab/federation/exchange.py has every check of a push and of the inbox).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from lab.api_params import body_field, body_object
from lab.errors import DomainError
from lab.federation.exchange import artifact_push, inbox_receive, received_decide
from lab.federation.models import ArtifactExport, FederationRound, OutgoingTransfer, Peer, ReceivedArtifact, SharingPolicy
from lab.federation.selectors import (
    export_list,
    federation_get,
    federation_list,
    peer_list,
    received_get,
    received_list,
    sharing_policy_list,
    transfer_list,
)
from lab.federation.services import federation_cancel, federation_create, peer_create, sharing_policy_set
from lab.projects.models import ADMIN_ROLES
from lab.projects.permissions import visible_projects, writable, write_project
from lab.projects.schema import PROJECT_PARAMETER


class PeerSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = Peer
        fields = ["id", "project", "name", "endpoint", "created_at"]
        read_only_fields = fields


class SharingPolicySerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    decided_by: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="username", read_only=True)
    canary_fields = serializers.SerializerMethodField()

    class Meta:
        model = SharingPolicy
        fields = ["id", "project", "kinds", "canary_fields", "note", "decided_by", "decided_at"]
        read_only_fields = fields

    def get_canary_fields(self, policy: SharingPolicy) -> list[str]:
        return sorted(policy.canaries)  # never the values


class ArtifactExportSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = ArtifactExport
        fields = ["id", "round", "project", "kind", "manifest", "sha256", "bytes", "gate", "refused", "created_at"]
        read_only_fields = fields


class FederationRoundSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)

    class Meta:
        model = FederationRound
        fields = [
            "id",
            "project",
            "name",
            "mode",
            "base_model",
            "participants",
            "config",
            "results",
            "status",
            "progress",
            "error",
            "created_at",
            "started_at",
            "ended_at",
        ]
        read_only_fields = fields


class OutgoingTransferSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    pushed_by: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = OutgoingTransfer
        fields = [
            "id",
            "project",
            "peer_name",
            "endpoint",
            "target",
            "export",
            "kind",
            "sha256",
            "bytes",
            "status",
            "response_status",
            "error",
            "remote_id",
            "pushed_by",
            "created_at",
        ]
        read_only_fields = fields


class ReceivedArtifactSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    decided_by: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = ReceivedArtifact
        fields = ["id", "project", "sender", "kind", "manifest", "sha256", "bytes", "status", "decided_by", "decided_at", "received_at"]
        read_only_fields = fields


def _slug(request: Request, body: Mapping[str, Any]) -> Any:
    return request.query_params.get("project") or body.get("project")


@extend_schema(tags=["federation"])
class PeerViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = PeerSerializer

    def get_queryset(self) -> Any:
        return peer_list(projects=visible_projects(self.request))

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: PeerSerializer}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request) -> Response:
        body = body_object(request)
        project = write_project(request, _slug(request, body), roles=ADMIN_ROLES, action="declare federation peers")
        peer = peer_create(
            project=project, name=body_field(body, "name", str, ""), endpoint=body_field(body, "endpoint", str, ""), user=request.user
        )
        return Response(PeerSerializer(peer).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["federation"])
class SharingPolicyViewSet(viewsets.ReadOnlyModelViewSet):
    """Every decision, newest first (the first one per project holds)."""

    serializer_class = SharingPolicySerializer

    def get_queryset(self) -> Any:
        return sharing_policy_list(projects=visible_projects(self.request))

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: SharingPolicySerializer}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request) -> Response:
        body = body_object(request)
        project = write_project(request, _slug(request, body), roles=ADMIN_ROLES, action="change what the project shares")
        policy = sharing_policy_set(
            project=project,
            kinds=body.get("kinds"),
            canaries=body.get("canaries"),
            note=body_field(body, "note", str, ""),
            user=request.user,
        )
        return Response(SharingPolicySerializer(policy).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["federation"])
class FederationRoundViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = FederationRoundSerializer

    def get_queryset(self) -> Any:
        return federation_list(projects=visible_projects(self.request))

    def get_object(self) -> FederationRound:
        return federation_get(projects=visible_projects(self.request), pk=self.kwargs["pk"])

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: FederationRoundSerializer}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request) -> Response:
        body = body_object(request)
        project = write_project(request, _slug(request, body), action="start federations")
        federation = federation_create(
            project=project,
            name=body_field(body, "name", str, ""),
            mode=body_field(body, "mode", str, ""),
            base_model=body_field(body, "base_model", str, ""),
            participants=body.get("participants"),
            config=body.get("config") or {},
            user=request.user,
            projects=visible_projects(request),
        )
        return Response(FederationRoundSerializer(federation).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        federation = writable(request, self.get_object(), action="cancel federations")
        return Response(FederationRoundSerializer(federation_cancel(federation=federation)).data)

    @extend_schema(responses=ArtifactExportSerializer(many=True))
    @action(detail=True, methods=["get"])
    def exports(self, request: Request, pk: str) -> Response:
        return Response(ArtifactExportSerializer(export_list(federation=self.get_object()), many=True).data)


@extend_schema(tags=["federation"])
class OutgoingTransferViewSet(viewsets.ReadOnlyModelViewSet):
    """Every push to another installation, newest first; POST pushes one export (the owner's)."""

    serializer_class = OutgoingTransferSerializer

    def get_queryset(self) -> Any:
        return transfer_list(projects=visible_projects(self.request))

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: OutgoingTransferSerializer}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request) -> Response:
        body = body_object(request)
        project = write_project(request, _slug(request, body), roles=ADMIN_ROLES, action="push artifacts to other installations")
        transfer = artifact_push(
            project=project, export_id=body.get("export"), peer_name=body.get("peer"), target=body.get("target"), user=request.user
        )
        return Response(OutgoingTransferSerializer(transfer).data, status=status.HTTP_201_CREATED)


@extend_schema(tags=["federation"])
class ReceivedArtifactViewSet(viewsets.ReadOnlyModelViewSet):
    """Artifacts other installations pushed to your projects; an owner accepts or rejects each pending one."""

    serializer_class = ReceivedArtifactSerializer

    def get_queryset(self) -> Any:
        return received_list(projects=visible_projects(self.request))

    def get_object(self) -> ReceivedArtifact:
        return received_get(projects=visible_projects(self.request), pk=self.kwargs["pk"])

    def _decide(self, request: Request, accept: bool) -> Response:
        received = writable(request, self.get_object(), action="decide on received artifacts", roles=ADMIN_ROLES)
        return Response(ReceivedArtifactSerializer(received_decide(received=received, accept=accept, user=request.user)).data)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def accept(self, request: Request, pk: str) -> Response:
        return self._decide(request, accept=True)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        return self._decide(request, accept=False)


class InboxView(APIView):
    """Another installation's push, authenticated by its signature alone (no session, no API key, so no CSRF)."""

    authentication_classes: list[Any] = []
    permission_classes = [AllowAny]

    @extend_schema(
        operation_id="federation_inbox_push",
        tags=["federation"],
        auth=[],
        request=OpenApiTypes.OBJECT,
        responses={
            201: OpenApiTypes.OBJECT,
            400: OpenApiTypes.OBJECT,
            401: OpenApiTypes.OBJECT,
            404: OpenApiTypes.OBJECT,
            409: OpenApiTypes.OBJECT,
            413: OpenApiTypes.OBJECT,
        },
    )
    def post(self, request: Request) -> Response:
        budget = settings.PRACTICUM_FEDERATION_MAX_BYTES
        length = request.META.get("CONTENT_LENGTH") or "0"
        if not length.isdigit() or int(length) > budget:
            raise DomainError("too_large", f"the push is {length[:20]} bytes; this installation takes at most {budget}", status=413)
        body = request._request.read(budget + 1)  # the raw bytes: their sha256 is signed
        if len(body) > budget:
            raise DomainError("too_large", f"the push is over {budget} bytes; this installation takes at most {budget}", status=413)
        received = inbox_receive(method=request.method or "POST", path=request.path, headers=request.headers, body=body)
        return Response({"id": received.pk, "status": received.status, "sha256": received.sha256}, status=status.HTTP_201_CREATED)
