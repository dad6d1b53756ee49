"""Diagnoses API: members read; owners, researchers and experts write diagnoses; owners and researchers run jobs.

GET/POST   /diagnoses/                      list (filters: episode, category, origin, verification) / a human diagnosis
POST       /diagnoses/{id}/verify/          verify by replay (Celery; ?wait=1 runs it now and answers the result)
POST       /diagnoses/propose/              {episode, agent} a model diagnosis, or 422 with the recorded bad answer
POST       /diagnoses/rule/                 {episode, anchor} a rule diagnosis at the pivotal step
POST       /diagnoses/pivotal/              {episode, anchor, seeds?, search?} label the pivotal step on the episode
GET        /diagnoses/credit/?episode=ID    per-step graph credit, dependency edges, top steps
GET        /diagnoses/export/?view=diagnosis|recovery   JSONL (filters as the list)
GET        /diagnoses/attempts/?episode=ID  model and rule answers, bad ones with their error
GET/POST   /diagnoses/jobs/, GET /diagnoses/jobs/{id}/   batch jobs with progress and the summary table
"""

from __future__ import annotations

from typing import Any

from django.http import StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema, extend_schema_view
from rest_framework import serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from environments.registry import env_meta
from lab.api_params import body_object
from lab.diagnoses.analysis import diagnosis_propose_model, diagnosis_propose_rule, episode_label_pivotal, episode_step_credit
from lab.diagnoses.coaching import episode_coach
from lab.diagnoses.exports import diagnoses_export_lines
from lab.diagnoses.jobs import diagnosis_job_launch
from lab.diagnoses.models import Diagnosis, DiagnosisAttempt, DiagnosisJob
from lab.diagnoses.policies import runs_a_model
from lab.diagnoses.selectors import diagnosis_attempt_list, diagnosis_job_get, diagnosis_job_list, diagnosis_list_with_children
from lab.diagnoses.services import diagnosis_create, diagnosis_may_edit, diagnosis_update
from lab.diagnoses.tasks import verify_diagnosis
from lab.diagnoses.verification import diagnosis_verify
from lab.edge import id_param
from lab.errors import DomainError, Forbidden, NotFound
from lab.projects.models import ANNOTATE_ROLES, WRITE_ROLES
from lab.projects.permissions import require_role, visible_projects
from lab.trajectories.models import AgentConfig, Episode
from lab.trajectories.selectors import agent_find_by_name, episode_get


class DiagnosisSerializer(serializers.ModelSerializer):
    episode = serializers.IntegerField(source="episode_id")
    child_episodes: Any = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta:
        model = Diagnosis
        fields = [
            "id",
            "episode",
            "step_index",
            "category",
            "explanation",
            "evidence_steps",
            "correction",
            "origin",
            "author_model",
            "confidence",
            "verification",
            "verification_result",
            "child_episodes",
            "created_at",
        ]
        read_only_fields = ["id", "origin", "verification", "verification_result", "child_episodes", "created_at"]


class AttemptSerializer(serializers.ModelSerializer):
    class Meta:
        model = DiagnosisAttempt
        fields = ["id", "episode", "job", "origin", "author_model", "diagnosis", "ok", "error", "answer", "created_at"]


class JobSerializer(serializers.ModelSerializer):
    agent = serializers.CharField(source="agent.name", default=None, read_only=True)

    class Meta:
        model = DiagnosisJob
        fields = [
            "id",
            "project",
            "episode_ids",
            "agent",
            "rule_anchor",
            "pivotal_anchor",
            "verify",
            "status",
            "done",
            "total",
            "summary",
            "error",
            "created_at",
            "ended_at",
        ]


def _wants_wait(request: Request) -> bool:
    return str(request.query_params.get("wait", "")).lower() in ("1", "true")


_WAIT = OpenApiParameter("wait", bool, description="Run it now and answer its result instead of 202.")
_LIST_FILTERS = [OpenApiParameter("episode", int), *(OpenApiParameter(name, str) for name in ("category", "origin", "verification"))]


@extend_schema_view(list=extend_schema(parameters=_LIST_FILTERS))
@extend_schema(tags=["diagnoses"])
class DiagnosisViewSet(viewsets.ModelViewSet):
    serializer_class = DiagnosisSerializer

    def get_queryset(self) -> Any:
        params = self.request.query_params
        filters = {name: params.get(name) for name in ("category", "origin", "verification")}
        if params.get("episode"):
            filters["episode"] = id_param(params["episode"], name="episode")  # refused by name, where the page ignores it
        return diagnosis_list_with_children(projects=visible_projects(self.request), filters=filters)

    def _episode(self, value: Any, *, roles: frozenset[str] | None = None, act: str = "") -> Episode:
        episode = episode_get(projects=visible_projects(self.request), pk=id_param(value, name="episode"))
        if roles is not None:
            require_role(request=self.request, project=episode.project, roles=roles, action=act)
        return episode

    def perform_create(self, serializer: Any) -> None:
        data = serializer.validated_data
        episode = self._episode(data.pop("episode_id"), roles=ANNOTATE_ROLES, act="write diagnoses")
        serializer.instance = diagnosis_create(episode=episode, author=self.request.user, **data)

    def perform_update(self, serializer: Any) -> None:
        diagnosis = serializer.instance
        role = require_role(request=self.request, project=diagnosis.episode.project, roles=ANNOTATE_ROLES, action="change diagnoses")
        data = dict(serializer.validated_data)
        if "episode_id" in data and data.pop("episode_id") != diagnosis.episode_id:
            raise serializers.ValidationError({"episode": "a diagnosis cannot move to another episode"})
        for name in ("author_model",):  # writable on create only: who wrote it is not for an editor to change
            data.pop(name, None)
        serializer.instance = diagnosis_update(diagnosis=diagnosis, user=self.request.user, role=role, changes=data)

    def perform_destroy(self, instance: Diagnosis) -> None:
        role = require_role(request=self.request, project=instance.episode.project, roles=ANNOTATE_ROLES, action="delete diagnoses")
        if not diagnosis_may_edit(diagnosis=instance, user=self.request.user, role=role):
            raise Forbidden("forbidden", f"only its author or a project owner may delete diagnosis {instance.pk}", path="diagnosis")
        instance.delete()

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: DiagnosisSerializer, 202: DiagnosisSerializer}, parameters=[_WAIT])
    @action(detail=True, methods=["post"])
    def verify(self, request: Request, pk: str) -> Response:
        diagnosis = self.get_object()
        require_role(request=request, project=diagnosis.episode.project, roles=ANNOTATE_ROLES, action="verify diagnoses")
        name = body_object(request).get("agent")
        agent = self._agent(name, diagnosis.episode) if name else None
        if runs_a_model(agent if agent is not None else diagnosis.episode.agent):
            # The branches are played by a model on the server, on the caller's behalf: a rollout's role.
            require_role(
                request=request, project=diagnosis.episode.project, roles=WRITE_ROLES, action="verify diagnoses with a model agent"
            )
        if _wants_wait(request) or agent is not None:
            diagnosis = diagnosis_verify(diagnosis=diagnosis, agent=agent)
            return Response(DiagnosisSerializer(diagnosis).data)
        if not diagnosis.correction:
            raise DomainError("no_correction", f"diagnosis {diagnosis.pk} proposes no corrected action, so there is nothing to replay")
        verify_diagnosis.delay(diagnosis.pk)
        return Response(DiagnosisSerializer(diagnosis).data, status=status.HTTP_202_ACCEPTED)

    def _agent(self, name: Any, episode: Episode) -> AgentConfig:
        agent = agent_find_by_name(project=episode.project, name=str(name))
        if agent is None:
            raise NotFound("not_found", f"no agent {name!r} in project {episode.project.slug}", path="agent")
        return agent

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: DiagnosisSerializer, 422: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def propose(self, request: Request) -> Response:
        body = body_object(request)
        episode = self._episode(body.get("episode"), roles=WRITE_ROLES, act="ask models for diagnoses")
        attempt = diagnosis_propose_model(episode=episode, agent=self._agent(body.get("agent"), episode))
        if attempt.diagnosis is None:
            return Response(
                {"error": {"code": "bad_answer", "message": attempt.error, "attempt": AttemptSerializer(attempt).data}},
                status=status.HTTP_422_UNPROCESSABLE_ENTITY,
            )
        return Response(DiagnosisSerializer(attempt.diagnosis).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=OpenApiTypes.OBJECT, responses={201: DiagnosisSerializer, 422: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def rule(self, request: Request) -> Response:
        body = body_object(request)
        episode = self._episode(body.get("episode"), roles=ANNOTATE_ROLES, act="write diagnoses")
        attempt = diagnosis_propose_rule(episode=episode, anchor=str(body.get("anchor") or env_meta(episode.task.env).default_anchor))
        if attempt.diagnosis is None:
            return Response(
                {"error": {"code": "no_diagnosis", "message": attempt.error, "attempt": AttemptSerializer(attempt).data}},
                status=status.HTTP_422_UNPROCESSABLE_ENTITY,
            )
        return Response(DiagnosisSerializer(attempt.diagnosis).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=OpenApiTypes.OBJECT, responses=OpenApiTypes.OBJECT)
    @action(detail=False, methods=["post"])
    def pivotal(self, request: Request) -> Response:
        body = body_object(request)
        episode = self._episode(body.get("episode"), roles=ANNOTATE_ROLES, act="label episodes")
        seeds = body.get("seeds") or [0]
        if (
            not isinstance(seeds, list)
            or not seeds
            or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds)
            or len(seeds) > 8
        ):
            raise DomainError("invalid_parameter", f"seeds must be a list of 1 to 8 integers, got {seeds!r}", path="seeds")
        label = episode_label_pivotal(
            episode=episode,
            anchor=str(body.get("anchor") or env_meta(episode.task.env).default_anchor),
            seeds=tuple(seeds),
            search=str(body.get("search") or "binary"),
        )
        return Response({"episode": episode.pk, "pivotal": label})

    @extend_schema(
        parameters=[OpenApiParameter("episode", int, required=True), OpenApiParameter("damping", float), OpenApiParameter("top", float)],
        responses=OpenApiTypes.OBJECT,
    )
    @action(detail=False, methods=["get"])
    def credit(self, request: Request) -> Response:
        episode = self._episode(request.query_params.get("episode"))
        try:
            damping = float(request.query_params.get("damping", 0.85))
            top = float(request.query_params.get("top", 0.2))
        except ValueError:
            raise DomainError("invalid_parameter", "damping and top must be numbers") from None
        return Response(episode_step_credit(episode=episode, damping=damping, top_fraction=top))

    @extend_schema(
        parameters=[OpenApiParameter("view", str, enum=["diagnosis", "recovery"]), *_LIST_FILTERS],
        responses={(200, "application/x-ndjson"): OpenApiResponse(OpenApiTypes.STR, description="One JSON record per line.")},
    )
    @action(detail=False, methods=["get"])
    def export(self, request: Request) -> StreamingHttpResponse:
        view = request.query_params.get("view", "diagnosis")
        lines = diagnoses_export_lines(diagnoses=self.get_queryset(), view=view)
        response = StreamingHttpResponse(lines, content_type="application/x-ndjson")
        response["Content-Disposition"] = f'attachment; filename="diagnoses-{view}.jsonl"'
        return response

    @extend_schema(parameters=[OpenApiParameter("episode", int), OpenApiParameter("job", int)], responses=AttemptSerializer(many=True))
    @action(detail=False, methods=["get"])
    def attempts(self, request: Request) -> Response:
        params = request.query_params
        attempts = diagnosis_attempt_list(
            projects=visible_projects(request),
            episode_id=id_param(params["episode"], name="episode") if params.get("episode") else None,
            job_id=id_param(params["job"], name="job") if params.get("job") else None,
        )
        return Response(AttemptSerializer(attempts[:500], many=True).data)

    @extend_schema(methods=["GET"], operation_id="diagnoses_jobs_list", responses=JobSerializer(many=True))
    @extend_schema(methods=["POST"], request=OpenApiTypes.OBJECT, responses={201: JobSerializer, 202: JobSerializer}, parameters=[_WAIT])
    @action(detail=False, methods=["get", "post"])
    def jobs(self, request: Request) -> Response:
        if request.method == "GET":
            jobs = diagnosis_job_list(projects=visible_projects(request))[:100]
            return Response(JobSerializer(jobs, many=True).data)
        body = body_object(request)
        ids = body.get("episodes")
        first = self._episode(ids[0] if isinstance(ids, list) and ids else None, roles=WRITE_ROLES, act="run diagnosis jobs")
        wait = _wants_wait(request)
        job = diagnosis_job_launch(
            project=first.project,
            episode_ids=ids,
            agent=self._agent(body["agent"], first) if body.get("agent") else None,
            rule_anchor=str(body.get("rule_anchor") or ""),
            pivotal_anchor=str(body.get("pivotal_anchor") or ""),
            verify=bool(body.get("verify", True)),
            user=request.user,
            enqueue=not wait,
        )
        if wait:
            from lab.diagnoses.jobs import diagnosis_job_run

            job = diagnosis_job_run(job_id=job.pk)
            return Response(JobSerializer(job).data, status=status.HTTP_201_CREATED)
        return Response(JobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(responses=JobSerializer, parameters=[OpenApiParameter("job_id", int, OpenApiParameter.PATH)])
    @action(detail=False, methods=["get"], url_path=r"jobs/(?P<job_id>\d+)")
    def job(self, request: Request, job_id: str) -> Response:
        job = diagnosis_job_get(projects=visible_projects(request), pk=int(job_id))
        return Response(JobSerializer(job).data)


class EpisodeCoachView(APIView):
    """POST /api/v1/episodes/<id>/coach/: write coaching notes on the episode's user turns (lab.diagnoses.coaching)."""

    @extend_schema(
        operation_id="episodes_coach_create",
        tags=["episodes"],
        request={"application/json": OpenApiTypes.OBJECT},
        responses=OpenApiTypes.OBJECT,
    )
    def post(self, request: Request, pk: str) -> Response:
        """{"coach": "rule-coach" | an agent of the project}. Answers {"notes": [{"step", "anticipates_step", "note",
        "coach"}]}; researchers and owners only."""
        episode = episode_get(projects=visible_projects(request), pk=pk)
        body = request.data if isinstance(request.data, dict) else {}
        return Response({"notes": episode_coach(episode=episode, coach=body.get("coach", ""), user=request.user)})
