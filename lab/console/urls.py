from django.urls import include, path

from lab.console.views import compare, dashboard, diagnoses, episodes, jobs, leaderboard, viewer

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("healthz", dashboard.healthz, name="healthz"),
    path("episodes/", episodes.episode_list_page, name="episodes"),
    path("episodes/<int:pk>/", viewer.episode_viewer, name="episode"),
    path("episodes/<int:pk>/steps", viewer.episode_steps, name="episode-steps"),
    path("episodes/<int:pk>/search", viewer.episode_search, name="episode-search"),
    path("episodes/<int:pk>/tool-form", viewer.tool_form, name="episode-tool-form"),
    path("episodes/<int:pk>/diagnoses", viewer.diagnosis_add, name="episode-diagnose"),
    path("compare/", compare.compare, name="compare"),
    path("leaderboard/", leaderboard.leaderboard_page, name="leaderboard"),
    path("runs/", jobs.run_list, name="runs"),
    path("runs/<int:pk>/", jobs.run_detail, name="run"),
    path("runs/<int:pk>/metrics.json", jobs.run_metrics, name="run-metrics"),
    path("evaluations/", jobs.evaluation_list, name="evaluations"),
    path("evaluations/<int:pk>/", jobs.evaluation_detail, name="evaluation"),
    path("diagnoses/", diagnoses.diagnosis_list, name="diagnoses"),
    path("play/", include("lab.play.urls")),
]
