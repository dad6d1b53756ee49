from django.contrib import admin

from lab.play.models import HumanSession


@admin.register(HumanSession)
class HumanSessionAdmin(admin.ModelAdmin):
    list_display = ["user", "task", "seed", "status", "budget_used", "last_active_at"]
    list_filter = ["status"]
    raw_id_fields = ["episode"]
