from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "lab.projects"
    label = "projects"

    def ready(self) -> None:
        # drf-spectacular finds extensions by import; the API-key scheme must be loaded before any schema is built.
        from lab.projects import schema  # noqa: F401
