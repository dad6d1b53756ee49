from django.contrib import admin

from lab.live.models import LiveEvent


@admin.register(LiveEvent)
class LiveEventAdmin(admin.ModelAdmin):
    list_display = ["stream", "seq", "kind", "created_at"]
    list_filter = ["kind"]
    search_fields = ["stream"]
