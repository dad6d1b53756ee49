from django.apps import AppConfig


class ImproveConfig(AppConfig):
    name = "lab.improve"
    label = "improve"
    verbose_name = "Improvement loops"
