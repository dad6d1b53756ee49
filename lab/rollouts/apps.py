from django.apps import AppConfig


class RolloutsConfig(AppConfig):
    name = "lab.rollouts"
    label = "rollouts"
