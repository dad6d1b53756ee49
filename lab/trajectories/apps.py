from django.apps import AppConfig


class TrajectoriesConfig(AppConfig):
    name = "lab.trajectories"
    label = "trajectories"
