"""REST API v1 for episodes, uploads, exports, tasks and agent configs. Views stay thin: services do the work."""

from __future__ import annotations

import hashlib
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from environments.coaching import without_coach_notes
from lab import ingest
from lab.api_params import query_int
from lab.edge import int_param
from lab.errors import Conflict, DomainError, Forbidden
from lab.jobs import JobStatus
from lab.projects.models import WRITE_ROLES
from lab.projects.permissions import require_role, visible_projects, write_project
from lab.projects.schema import PROJECT_PARAMETER
from lab.trajectories import imports
from lab.trajectories.exports import VIEWS, dataset_export_lines
from lab.trajectories.models import IdempotencyRecord, Task
from lab.trajectories.selectors import FILTER_FIELDS, episode_get, episode_in_play_by, episode_list, idempotency_record_find, import_job_get
from lab.trajectories.serializers import (
    EpisodeImportRequestSerializer,
    EpisodeSerializer,
    EpisodeStepsPageSerializer,
    EpisodeUploadResultSerializer,
    ImportJobSerializer,
    TaskSerializer,
)
from lab.trajectories.services import episode_steps_as_dicts, episode_to_record


class EpisodeCursor(CursorPagination):
    ordering = "-id"
    page_size = 50
    page_size_query_param = "limit"
    max_page_size = 500


def _param(request: Request, name: str) -> str | None:
    """A parameter from the query string, else from a form/JSON body."""
    value = request.query_params.get(name)
    if value is None and isinstance(request.data, dict):
        value = request.data.get(name)
    return str(value) if value is not None else None


def _check_size(request: Request) -> None:
    imports.upload_size_check(int(request.META.get("CONTENT_LENGTH") or 0), what="upload")


def _idempotent(request: Request, project: Any, body: bytes, produce: Any) -> Response:
    """Run `produce()` once per `Idempotency-Key`: a repeat with the same body gets the first answer again."""
    key = request.headers.get("Idempotency-Key", "").strip()
    if not key:
        return produce()
    if len(key) > 200:
        raise DomainError("invalid_idempotency_key", "Idempotency-Key may be at most 200 characters")
    digest = hashlib.sha256(body).hexdigest()
    stored = idempotency_record_find(project=project, key=key)
    if stored is None:
        response = produce()
        if response.status_code < 500:
            try:
                with transaction.atomic():
                    IdempotencyRecord.objects.create(
                        project=project, key=key, request_hash=digest, status_code=response.status_code, response=response.data
                    )
            except IntegrityError:  # a concurrent request with the same key won; its answer stands
                pass
        return response
    if stored.request_hash != digest:
        raise Conflict("idempotency_key_reused", f"Idempotency-Key {key!r} was used with a different request body")
    return Response(stored.response, status=stored.status_code, headers={"Idempotent-Replayed": "true"})


@extend_schema(tags=["episodes"])
class EpisodeViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Episodes of your projects. POST a native trajectory record (or a list of them) to store it."""

    serializer_class = EpisodeSerializer
    pagination_class = EpisodeCursor

    def get_queryset(self) -> Any:
        episodes = episode_list(
            projects=visible_projects(self.request), filters={k: self.request.query_params.get(k) for k in FILTER_FIELDS}
        )
        return episodes.select_related("human_session__user", "human_session__agent")  # the serializer's `session`

    def get_object(self) -> Any:
        episode = episode_get(projects=visible_projects(self.request), pk=self.kwargs["pk"])
        if episode_in_play_by(episode=episode, user=self.request.user):  # its steps and events would be free reads
            raise Forbidden("in_play", f"You are playing episode {episode.pk}; read it here once the session ends.")
        return episode

    @extend_schema(parameters=[OpenApiParameter(name, str, required=False) for name in FILTER_FIELDS])
    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return super().list(request, *args, **kwargs)

    @extend_schema(
        request={"application/json": OpenApiTypes.OBJECT},
        responses={200: EpisodeUploadResultSerializer, 201: EpisodeUploadResultSerializer},
        parameters=[PROJECT_PARAMETER],
    )
    def create(self, request: Request) -> Response:
        _check_size(request)
        body = request.body
        project = write_project(request, request.query_params.get("project"), action="upload episodes")

        def produce() -> Response:
            stored = imports.upload_ingest(
                project=project,
                user=request.user,
                data=body,
                filename="body.json",
                fmt="native",
                provenance=imports.upload_provenance(request.auth),
            )
            outcomes = stored.outcomes
            created = any(o.created for o in outcomes)
            data = {
                "episodes": [
                    {"id": o.episode.pk, "created": o.created, "content_hash": o.episode.content_hash, "provenance": o.episode.provenance}
                    for o in outcomes
                ],
                "report": stored.report,
            }
            return Response(data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK)

        return _idempotent(request, project, body, produce)

    @extend_schema(parameters=[OpenApiParameter("offset", int), OpenApiParameter("limit", int)], responses=EpisodeStepsPageSerializer)
    @action(detail=True, methods=["get"])
    def steps(self, request: Request, pk: str) -> Response:
        episode = self.get_object()
        offset = query_int(request, "offset", default=0, low=0, high=10**9)
        limit = query_int(request, "limit", default=100, low=1, high=1000)
        steps = episode_steps_as_dicts(episode, start=offset, stop=offset + limit)
        following = offset + limit if offset + limit < episode.step_count else None
        return Response({"count": episode.step_count, "offset": offset, "next_offset": following, "steps": steps})

    @extend_schema(parameters=[OpenApiParameter("format", str, enum=["native", "openai"])], responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["get"])
    def export(self, request: Request, pk: str) -> Response:
        episode = self.get_object()
        fmt = request.query_params.get("format", "native")
        record = without_coach_notes(episode_to_record(episode))  # coaching notes are privileged: datasets view=coach
        if fmt == "native":
            return Response(record)
        if fmt == "openai":
            try:
                return Response(imports.export_openai(record))
            except ingest.ConversationError as exc:
                raise DomainError(exc.code, f"episode {episode.pk} is {exc}", status=422, problems=exc.problems) from None
        raise DomainError("unknown_format", f"format={fmt!r}; use native or openai")


@extend_schema(tags=["episodes"])
class EpisodeImportView(APIView):
    """Upload a file (JSON, JSONL or zip) in any supported format; it is imported by a background job.

    The file is checked at once (a bad record answers 400 naming it and stores nothing); then a job stores
    it and the answer (202) points at the job. `?wait=1` waits for the job and answers with its result.
    """

    @extend_schema(
        request={"multipart/form-data": EpisodeImportRequestSerializer},
        parameters=[OpenApiParameter("format", str, enum=list(imports.FORMATS)), OpenApiParameter("wait", bool), PROJECT_PARAMETER],
        responses={200: ImportJobSerializer, 201: ImportJobSerializer, 202: ImportJobSerializer},
    )
    def post(self, request: Request) -> Response:
        _check_size(request)
        project = write_project(request, _param(request, "project"), action="upload episodes")
        upload = request.FILES.get("file")
        if upload is None:
            raise DomainError("file_required", "send the file as multipart field `file`")
        imports.upload_size_check(upload.size or 0)
        fmt = _param(request, "format") or "auto"
        data = upload.read()

        def produce() -> Response:
            job = imports.import_job_create(
                project=project,
                user=request.user,
                filename=upload.name,
                data=data,
                fmt=fmt,
                provenance=imports.upload_provenance(request.auth),
            )
            if str(request.query_params.get("wait", "")).lower() in ("1", "true"):
                job = imports.import_job_wait(job, timeout_s=120)
            code = status.HTTP_201_CREATED if job.status == JobStatus.FINISHED else status.HTTP_202_ACCEPTED
            return Response(imports.import_job_json(job), status=code)

        return _idempotent(request, project, data + fmt.encode(), produce)


@extend_schema(tags=["episodes"])
class ImportJobView(APIView):
    @extend_schema(responses=ImportJobSerializer)
    def get(self, request: Request, pk: int) -> Response:
        job = import_job_get(projects=visible_projects(request), pk=pk)
        return Response(imports.import_job_json(job))


@extend_schema(tags=["datasets"], parameters=[OpenApiParameter(name, str, required=False) for name in FILTER_FIELDS])
class DatasetExportView(APIView):
    """Stream matching episodes as JSONL, one OpenAI-style `{"messages", "tools"}` record per line (`format=native`
    streams canonical records instead).

    An episode with no valid chat rendering (lab.ingest.export.conversation_problems) is left out of an OpenAI
    export, never written as an invalid conversation: the stream then ends with one line
    `{"skipped": [{"episode_id", "problems"}]}` naming each such episode and why.

    `view=role&role=critic` streams each role's own training data instead: one line per turn of that role, with
    what it saw, what it did and the episode's outcome (lab.trajectories.exports). `view=worldmodel` streams
    world-model training records (screen + action -> next screen) of the environments that declare them."""

    @extend_schema(
        operation_id="datasets_export",
        parameters=[
            OpenApiParameter("format", str, enum=["openai", "native"]),
            OpenApiParameter(
                "view",
                str,
                enum=list(VIEWS),
                description="role: each turn of `role` with its outcome; coach: each coaching note with the actor's turn; "
                "worldmodel: each transition of environments with world-model data as a training record",
            ),
            OpenApiParameter("role", str, description="with view=role: critic, consultant, user, a workflow role..."),
        ],
        responses={(200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="One JSON record per line.")},
    )
    def get(self, request: Request) -> StreamingHttpResponse:
        episodes = episode_list(projects=visible_projects(request), filters={k: request.query_params.get(k) for k in FILTER_FIELDS})
        params = request.query_params
        view, role = params.get("view", "episode"), params.get("role", "")
        lines = dataset_export_lines(episodes=episodes, view=view, fmt=params.get("format", "openai"), role=role)
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="{role if view == "role" else "dataset"}.jsonl"'
        return response


@extend_schema(exclude=True)  # the same operation with a trailing slash: described (and named) once, above
class DatasetExportSlashView(DatasetExportView):
    pass


class ProjectScopedViewSet(viewsets.ModelViewSet):
    """CRUD on a model with a `project` field: reads for members, writes for `write_roles`."""

    write_roles: frozenset[str] = WRITE_ROLES

    def _noun(self, *, plural: bool = False) -> str:
        meta = self.get_queryset().model._meta
        return str(meta.verbose_name_plural if plural else meta.verbose_name)

    def get_queryset(self) -> Any:
        queryset = super().get_queryset().filter(project__in=visible_projects(self.request))
        if self.request.query_params.get("project"):
            key = self.request.query_params["project"]
            queryset = queryset.filter(project__pk=int_param(key, name="project")) if key.isdigit() else queryset.filter(project__slug=key)
        return queryset

    def perform_create(self, serializer: Any) -> None:
        project = write_project(
            self.request, _param(self.request, "project"), roles=self.write_roles, action=f"create {self._noun(plural=True)}"
        )
        try:
            with transaction.atomic():
                serializer.save(project=project)
        except IntegrityError as exc:
            raise Conflict("duplicate", f"that {self._noun()} already exists in {project.slug}") from exc

    def perform_update(self, serializer: Any) -> None:
        require_role(request=self.request, project=serializer.instance.project, roles=self.write_roles, action="change it")
        serializer.save()

    def perform_destroy(self, instance: Any) -> None:
        require_role(request=self.request, project=instance.project, roles=self.write_roles, action="delete it")
        try:
            instance.delete()
        except ProtectedError as exc:  # a task with episodes, an agent with rollouts: they stay
            raise Conflict("in_use", f"{instance} is still referenced and cannot be deleted") from exc


@extend_schema(tags=["tasks"], parameters=[PROJECT_PARAMETER])
class TaskViewSet(ProjectScopedViewSet):
    queryset = Task.objects.select_related("project")
    serializer_class = TaskSerializer
