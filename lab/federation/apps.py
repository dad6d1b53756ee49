from django.apps import AppConfig


class FederationConfig(AppConfig):
    name = "lab.federation"
    label = "federation"
