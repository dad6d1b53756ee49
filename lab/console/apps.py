from django.apps import AppConfig


class ConsoleConfig(AppConfig):
    name = "lab.console"
    label = "console"
