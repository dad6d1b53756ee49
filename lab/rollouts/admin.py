from django.contrib import admin

from lab.rollouts.models import Evaluation


@admin.register(Evaluation)
class EvaluationAdmin(admin.ModelAdmin):
    list_display = ["agent", "task_set", "status", "progress", "project", "created_at"]
    list_filter = ["status", "project"]
    raw_id_fields = ["episodes"]
