from django.urls import include, path

from lab.console.views import compare, dashboard, diagnoses, diagnosis_jobs, episodes, jobs, launch, leaderboard, viewer, viewer_analysis

urlpatterns = [
    path("", dashboard.dashboard, name="dashboard"),
    path("healthz", dashboard.healthz, name="healthz"),
    path("episodes/", episodes.episode_list_page, name="episodes"),
    path("episodes/<int:pk>/", viewer.episode_viewer, name="episode"),
    path("episodes/<int:pk>/steps", viewer.episode_steps, name="episode-steps"),
    path("episodes/<int:pk>/search", viewer.episode_search, name="episode-search"),
    path("episodes/<int:pk>/tool-form", viewer.tool_form, name="episode-tool-form"),
    path("episodes/<int:pk>/diagnoses", viewer.diagnosis_add, name="episode-diagnose"),
    path("episodes/<int:pk>/pivotal", viewer_analysis.episode_pivotal, name="episode-pivotal"),
    path("compare/", compare.compare, name="compare"),
    path("leaderboard/", leaderboard.leaderboard_page, name="leaderboard"),
    path("runs/", jobs.run_list, name="runs"),
    path("runs/<int:pk>/", jobs.run_detail, name="run"),
    path("runs/new", launch.run_new, name="run-new"),
    path("runs/<int:pk>/cancel", launch.run_cancel_view, name="run-cancel"),
    path("runs/<int:pk>/checkpoints/<int:checkpoint_id>/evaluate", launch.checkpoint_evaluate_view, name="checkpoint-evaluate"),
    path("runs/<int:pk>/metrics.json", jobs.run_metrics, name="run-metrics"),
    path("evaluations/", jobs.evaluation_list, name="evaluations"),
    path("evaluations/<int:pk>/", jobs.evaluation_detail, name="evaluation"),
    path("evaluations/new", launch.evaluation_new, name="evaluation-new"),
    path("evaluations/<int:pk>/cancel", launch.evaluation_cancel_view, name="evaluation-cancel"),
    path("rollouts/new", launch.rollout_new, name="rollout-new"),
    path("rollouts/<int:pk>/cancel", launch.rollout_cancel_view, name="rollout-cancel"),
    path("diagnoses/", diagnoses.diagnosis_list, name="diagnoses"),
    path("diagnoses/jobs/", diagnosis_jobs.diagnosis_job_list, name="diagnosis-jobs"),
    path("diagnoses/jobs/<int:pk>/", diagnosis_jobs.diagnosis_job_detail, name="diagnosis-job"),
    path("diagnoses/jobs/<int:pk>/export", diagnosis_jobs.diagnosis_job_export, name="diagnosis-job-export"),
    path("play/", include("lab.play.urls")),
]
