from django.apps import AppConfig


class PlayConfig(AppConfig):
    name = "lab.play"
    label = "play"
