from django.contrib import admin

from lab.diagnoses.models import Diagnosis


@admin.register(Diagnosis)
class DiagnosisAdmin(admin.ModelAdmin):
    list_display = ["episode", "step_index", "category", "origin", "verification", "created_at"]
    list_filter = ["category", "origin", "verification"]
    raw_id_fields = ["episode", "child_episodes"]
