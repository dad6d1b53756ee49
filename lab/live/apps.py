from django.apps import AppConfig


class LiveConfig(AppConfig):
    name = "lab.live"
    label = "live"
