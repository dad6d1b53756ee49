from django.apps import AppConfig


class ScreenshotsConfig(AppConfig):
    name = "lab.screenshots"
    label = "screenshots"
