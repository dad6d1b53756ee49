from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "lab.projects"
    label = "projects"
