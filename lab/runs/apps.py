from django.apps import AppConfig


class RunsConfig(AppConfig):
    name = "lab.runs"
    label = "runs"
