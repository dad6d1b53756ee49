from django.contrib import admin

from lab.runs.models import Checkpoint, RunMetric, TrainingRun


class CheckpointInline(admin.TabularInline):
    model = Checkpoint
    extra = 0


@admin.register(TrainingRun)
class TrainingRunAdmin(admin.ModelAdmin):
    list_display = ["name", "recipe", "base_model", "status", "progress", "project", "created_at"]
    list_filter = ["recipe", "status", "project"]
    inlines = [CheckpointInline]


@admin.register(RunMetric)
class RunMetricAdmin(admin.ModelAdmin):
    list_display = ["run", "step", "name", "value"]
    list_filter = ["name"]
