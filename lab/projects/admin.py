from django.contrib import admin

from lab.projects.models import ApiKey, Membership, Project


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "slug", "max_concurrent_jobs", "created_at"]
    search_fields = ["name", "slug"]
    inlines = [MembershipInline]


@admin.register(Membership)
class MembershipAdmin(admin.ModelAdmin):
    list_display = ["user", "project", "role"]
    list_filter = ["role", "project"]


@admin.register(ApiKey)
class ApiKeyAdmin(admin.ModelAdmin):
    list_display = ["name", "prefix", "project", "user", "created_at", "last_used_at", "revoked_at"]
    readonly_fields = ["prefix", "key_hash", "last_used_at"]
    actions = ["revoke"]

    @admin.action(description="Revoke the selected keys")
    def revoke(self, request, queryset):  # type: ignore[no-untyped-def]
        for key in queryset:
            key.revoke()
