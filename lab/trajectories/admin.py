from typing import Any

from django.contrib import admin
from django.db.models import QuerySet

from lab.projects.models import Project
from lab.trajectories.models import AgentConfig, Episode, ImportJob, Step, Task
from lab.trajectories.shared import shared_contexts_prune


@admin.register(Task)
class TaskAdmin(admin.ModelAdmin):
    list_display = ["env", "key", "env_version", "split", "project", "pass_threshold"]
    list_filter = ["env", "split", "project"]
    search_fields = ["key", "description"]


@admin.register(AgentConfig)
class AgentConfigAdmin(admin.ModelAdmin):
    list_display = ["name", "kind", "model", "project"]
    list_filter = ["kind", "project"]


@admin.register(Episode)
class EpisodeAdmin(admin.ModelAdmin):
    list_display = ["id", "task", "agent", "seed", "source", "status", "composite", "passed", "step_count", "created_at"]
    list_filter = ["source", "status", "passed", "project"]
    raw_id_fields = ["parent", "task", "agent"]
    list_select_related = ["task", "agent"]

    # The episodes' shared context stays while another episode names it; what none names any more goes with them.
    def delete_model(self, request: Any, obj: Episode) -> None:
        super().delete_model(request, obj)
        shared_contexts_prune(project=obj.project)

    def delete_queryset(self, request: Any, queryset: QuerySet[Episode]) -> None:
        projects = set(queryset.values_list("project", flat=True))
        super().delete_queryset(request, queryset)
        for project in Project.objects.filter(pk__in=projects):
            shared_contexts_prune(project=project)


@admin.register(Step)
class StepAdmin(admin.ModelAdmin):
    list_display = ["episode", "index", "source", "reward", "state_hash"]
    raw_id_fields = ["episode"]


@admin.register(ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["id", "filename", "format", "status", "project", "created_at"]
    list_filter = ["status", "format"]
