"""REST API for evaluations and rollouts: launch, read, cancel, compare, re-grade. Views are thin over services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from environments.seeds import SEED_MAX, SEED_MIN, SeedError, seeds_check
from lab.api_params import body_field, body_object
from lab.errors import DomainError, NotFound
from lab.projects.permissions import visible_projects, writable, write_project
from lab.projects.schema import PROJECT_PARAMETER
from lab.rollouts.comparisons import comparison_launch, comparison_summary
from lab.rollouts.evaluations import checkpoint_evaluate, evaluation_cancel, evaluation_compare, evaluation_launch, evaluation_regrade
from lab.rollouts.models import Comparison, Evaluation, RolloutJob
from lab.rollouts.selectors import comparison_list, evaluation_list, rollout_job_list
from lab.rollouts.services import rollout_cancel, rollout_launch
from lab.runs.selectors import checkpoint_get, run_get


class EvaluationSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    agent = serializers.CharField(source="agent.name", read_only=True)

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "project",
            "agent",
            "task_set",
            "seeds",
            "options",
            "status",
            "progress",
            "aggregate",
            "checkpoint",
            "created_at",
            "ended_at",
        ]
        read_only_fields = fields


def seed_field(**kwargs: Any) -> serializers.IntegerField:
    """A seed: a signed 64-bit integer, as the lab stores it (environments.seeds)."""
    return serializers.IntegerField(min_value=SEED_MIN, max_value=SEED_MAX, **kwargs)


class SeedListField(serializers.ListField):
    """A list of seeds, its length checked against PRACTICUM_MAX_SEEDS before any element is read."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(child=seed_field(), min_length=1, **kwargs)

    def to_internal_value(self, data: Any) -> list[int]:
        if isinstance(data, list) and len(data) > settings.PRACTICUM_MAX_SEEDS:
            raise serializers.ValidationError(f"{len(data)} seeds; at most {settings.PRACTICUM_MAX_SEEDS} are allowed")
        return super().to_internal_value(data)


class EvaluationLaunchSerializer(serializers.Serializer):
    agent = serializers.CharField(max_length=128, help_text="An agent's name; an environment anchor's name creates it on demand.")
    task_set = serializers.CharField(max_length=128, help_text='"storebench/eval", "storebench/dev", or one task id.')
    seeds = SeedListField()
    project = serializers.CharField(required=False)
    options = serializers.DictField(
        required=False, help_text='The environment\'s episode options, e.g. an attack setting {"attack": "quoted", "guidance": true}.'
    )


class RolloutSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    agent = serializers.CharField(source="agent.name", read_only=True)
    task = serializers.CharField(source="task.task_id", read_only=True)
    stream = serializers.SerializerMethodField()

    class Meta:
        model = RolloutJob
        fields = [
            "id",
            "project",
            "agent",
            "task",
            "seed",
            "options",
            "status",
            "episode",
            "evaluation",
            "attempts",
            "cancel_requested",
            "error",
            "stream",
            "created_at",
            "started_at",
            "ended_at",
        ]
        read_only_fields = fields

    def get_stream(self, job: RolloutJob) -> str | None:
        return f"/ws/episodes/{job.episode_id}/" if job.episode_id else None


class RolloutLaunchSerializer(serializers.Serializer):
    agent = serializers.CharField(max_length=128)
    task = serializers.CharField(max_length=200, help_text='A task id, e.g. "storebench/payment-outage".')
    seed = seed_field()
    project = serializers.CharField(required=False)
    options = serializers.DictField(
        required=False, help_text='The environment\'s episode options, e.g. an attack setting {"attack": "quoted", "guidance": true}.'
    )


@extend_schema(tags=["evaluations"])
class EvaluationViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Evaluations of an agent on a task set × seeds. POST launches one; its rollouts run as jobs."""

    serializer_class = EvaluationSerializer

    def get_queryset(self) -> Any:
        return evaluation_list(projects=visible_projects(self.request))

    @extend_schema(request=EvaluationLaunchSerializer, responses={201: EvaluationSerializer}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = EvaluationLaunchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        project = write_project(request, params.get("project") or request.query_params.get("project"), action="run evaluations")
        evaluation = evaluation_launch(
            project=project,
            agent=params["agent"],
            task_set=params["task_set"],
            seeds=params["seeds"],
            user=request.user,
            options=params.get("options"),
        )
        return Response(EvaluationSerializer(evaluation).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[OpenApiParameter("with", int, required=True, description="The other evaluation (B in A − B).")],
        responses=OpenApiTypes.OBJECT,
    )
    @action(detail=True, methods=["get"])
    def compare(self, request: Request, pk: str) -> Response:
        other_id = request.query_params.get("with", "")
        if not other_id.isdigit():
            raise DomainError("invalid_parameter", f"with={other_id!r}: name the other evaluation's id")
        other = self.get_queryset().filter(pk=int(other_id)).first()
        if other is None:
            raise DomainError("not_found", f"No evaluation {other_id} that you can see.", status=404)
        return Response(evaluation_compare(a=self.get_object(), b=other))

    @extend_schema(request=None, responses=OpenApiTypes.OBJECT)
    @action(detail=True, methods=["post"])
    def regrade(self, request: Request, pk: str) -> Response:
        # Replays every episode on the server: the same role as running the evaluation.
        evaluation = writable(request, self.get_object(), action="regrade evaluations")
        return Response(evaluation_regrade(evaluation=evaluation))

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        evaluation = writable(request, self.get_object(), action="cancel evaluations")
        return Response(EvaluationSerializer(evaluation_cancel(evaluation=evaluation)).data)


class ComparisonSerializer(serializers.ModelSerializer):
    project: serializers.SlugRelatedField = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    variants = serializers.SerializerMethodField()

    class Meta:
        model = Comparison
        fields = ["id", "project", "task_set", "seeds", "variants", "created_at"]
        read_only_fields = fields

    def get_variants(self, comparison: Comparison) -> list[str]:
        return [v["name"] for v in comparison.variants]


class ComparisonLaunchSerializer(serializers.Serializer):
    base = serializers.CharField(max_length=128, help_text="The base agent's name (e.g. the actor alone).")
    variants = serializers.ListField(
        child=serializers.CharField(max_length=128),
        min_length=1,
        max_length=8,
        help_text="The variants' agent names: the same actor with a critic, a harness level, a consultation cost...",
    )
    task_set = serializers.CharField(max_length=128)
    seeds = SeedListField()
    project = serializers.CharField(required=False)
    options = serializers.DictField(required=False, help_text="The environment's episode options, for every evaluation alike.")


@extend_schema(tags=["evaluations"])
class ComparisonViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Comparisons of role configurations: a base agent and variants evaluated on the same tasks and seeds; reading
    one gives each variant minus the base with paired 95% intervals and per-role statistics."""

    def get_queryset(self) -> Any:
        return comparison_list(projects=visible_projects(self.request))

    serializer_class = ComparisonSerializer
    pagination_class = None

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """The newest 200 comparisons of the projects you can see (read one for its figures)."""
        return Response(ComparisonSerializer(self.get_queryset()[:200], many=True).data)

    @extend_schema(responses=OpenApiTypes.OBJECT)
    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        return Response(comparison_summary(comparison=self.get_object()))

    @extend_schema(request=ComparisonLaunchSerializer, responses={201: OpenApiTypes.OBJECT}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = ComparisonLaunchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        project = write_project(request, params.get("project") or request.query_params.get("project"), action="run evaluations")
        comparison = comparison_launch(
            project=project,
            base=params["base"],
            variants=params["variants"],
            task_set=params["task_set"],
            seeds=params["seeds"],
            user=request.user,
            options=params.get("options"),
        )
        return Response(comparison_summary(comparison=comparison), status=status.HTTP_201_CREATED)


@extend_schema(tags=["rollouts"])
class RolloutViewSet(mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    """Single episodes of an agent on a task and seed, run as jobs and streamed live at `stream`."""

    serializer_class = RolloutSerializer

    def get_queryset(self) -> Any:
        return rollout_job_list(projects=visible_projects(self.request))

    @extend_schema(request=RolloutLaunchSerializer, responses={201: RolloutSerializer}, parameters=[PROJECT_PARAMETER])
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        data = RolloutLaunchSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        params = data.validated_data
        project = write_project(request, params.get("project") or request.query_params.get("project"), action="run rollouts")
        job = rollout_launch(
            project=project,
            agent=params["agent"],
            task=params["task"],
            seed=params["seed"],
            user=request.user,
            options=params.get("options"),
        )
        return Response(RolloutSerializer(job).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        job = writable(request, self.get_object(), action="cancel rollouts")
        return Response(RolloutSerializer(rollout_cancel(job=job)).data)


def _seeds(values: list[Any]) -> list[int]:
    try:
        return seeds_check(values, maximum=settings.PRACTICUM_MAX_SEEDS)
    except SeedError as exc:
        raise DomainError("invalid_seeds", f"seeds: {exc}", fields=["seeds"]) from None


class CheckpointEvaluateView(APIView):
    """POST /api/v1/runs/<id>/evaluate-checkpoint/ {"checkpoint": <id> | "step": N, "task_set", "seeds": [...], "sampling",
    "harness"}: evaluate one checkpoint of a run (the latest without either). It lives here, not in the runs API, because
    it starts an evaluation: rollouts depends on runs, never the other way round."""

    @extend_schema(
        tags=["runs"], operation_id="runs_evaluate_checkpoint_create", request=OpenApiTypes.OBJECT, responses={201: EvaluationSerializer}
    )
    def post(self, request: Request, pk: str) -> Response:
        run = writable(request, run_get(projects=visible_projects(request), pk=pk), action="evaluate checkpoints")
        body = body_object(request)
        if "checkpoint" in body:
            checkpoint = checkpoint_get(run=run, pk=body["checkpoint"])
        else:  # a step, or the latest
            chosen = run.checkpoints.filter(step=body_field(body, "step", int, 0)) if "step" in body else run.checkpoints.order_by("-step")
            found = chosen.first()
            if found is None:
                raise NotFound("not_found", f"run {run.pk} has no checkpoint" + (f" at step {body['step']}" if "step" in body else " yet"))
            checkpoint = found
        evaluation = checkpoint_evaluate(
            checkpoint=checkpoint,
            task_set=body_field(body, "task_set", str, ""),
            seeds=_seeds(body_field(body, "seeds", list, [])),
            sampling=body_field(body, "sampling", dict, {}) or None,
            harness=body_field(body, "harness", dict, {}) or None,
            user=request.user,
        )
        return Response(EvaluationSerializer(evaluation).data, status=status.HTTP_201_CREATED)
