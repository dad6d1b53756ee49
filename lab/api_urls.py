"""REST API v1 routes."""

from django.urls import path, re_path
from rest_framework.routers import DefaultRouter

from lab.console.api import EnvironmentListView, FidelityReportView
from lab.diagnoses.api import DiagnosisViewSet, EpisodeCoachView
from lab.federation.api import (
    FederationRoundViewSet,
    InboxView,
    OutgoingTransferViewSet,
    PeerViewSet,
    ReceivedArtifactViewSet,
    SharingPolicyViewSet,
)
from lab.improve.api import ImprovementLoopViewSet
from lab.rollouts.agents_api import AgentConfigViewSet
from lab.rollouts.api import CheckpointEvaluateView, ComparisonViewSet, EvaluationViewSet, RolloutViewSet
from lab.runs.api import TrainingRunViewSet
from lab.screenshots.api import ScreenshotView
from lab.trajectories.api import (
    DatasetExportSlashView,
    DatasetExportView,
    EpisodeImportView,
    EpisodeViewSet,
    ImportJobView,
    TaskViewSet,
)

router = DefaultRouter()
router.trailing_slash = "/?"  # `.../export` and `.../export/` both answer
router.register("episodes", EpisodeViewSet, basename="episode")
router.register("tasks", TaskViewSet, basename="task")
router.register("agents", AgentConfigViewSet, basename="agent")
router.register("diagnoses", DiagnosisViewSet, basename="diagnosis")
router.register("runs", TrainingRunViewSet, basename="run")
router.register("evaluations", EvaluationViewSet, basename="evaluation")
router.register("comparisons", ComparisonViewSet, basename="comparison")
router.register("rollouts", RolloutViewSet, basename="rollout")
router.register("loops", ImprovementLoopViewSet, basename="loop")
router.register("federation/peers", PeerViewSet, basename="federation-peer")
router.register("federation/policies", SharingPolicyViewSet, basename="federation-policy")
router.register("federation/rounds", FederationRoundViewSet, basename="federation-round")
router.register("federation/transfers", OutgoingTransferViewSet, basename="federation-transfer")
router.register("federation/received", ReceivedArtifactViewSet, basename="federation-received")

urlpatterns = [
    path("episodes/import/", EpisodeImportView.as_view(), name="episode-import"),
    re_path(r"^episodes/(?P<pk>[^/.]+)/coach/?$", EpisodeCoachView.as_view(), name="episode-coach"),
    path("imports/<int:pk>/", ImportJobView.as_view(), name="import-job"),
    path("datasets/export", DatasetExportView.as_view(), name="dataset-export"),
    path("datasets/export/", DatasetExportSlashView.as_view()),
    re_path(r"^screenshots/(?P<sha256>[^/]+)/?$", ScreenshotView.as_view(), name="screenshot"),
    re_path(r"^federation/inbox/?$", InboxView.as_view(), name="federation-inbox"),
    re_path(r"^fidelity/?$", FidelityReportView.as_view(), name="fidelity-report"),
    re_path(r"^environments/?$", EnvironmentListView.as_view(), name="environment-list"),
    re_path(r"^runs/(?P<pk>[^/.]+)/evaluate-checkpoint/?$", CheckpointEvaluateView.as_view(), name="run-evaluate-checkpoint"),
    *router.urls,
]
