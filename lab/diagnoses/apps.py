from django.apps import AppConfig


class DiagnosesConfig(AppConfig):
    name = "lab.diagnoses"
    label = "diagnoses"
