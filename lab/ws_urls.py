"""Websocket routes (lab/asgi.py), beside api_urls.py: the project's routing names every app's consumers, so no
app imports another's for it."""

from django.urls import path

from lab.improve.consumers import LoopStreamConsumer
from lab.runs.consumers import RunStreamConsumer
from lab.trajectories.consumers import EpisodeStreamConsumer

websocket_urlpatterns = [
    path("ws/episodes/<int:pk>/", EpisodeStreamConsumer.as_asgi()),
    path("ws/runs/<int:pk>/", RunStreamConsumer.as_asgi()),
    path("ws/loops/<int:pk>/", LoopStreamConsumer.as_asgi()),
]
