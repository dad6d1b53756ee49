"""The run form offers the ideacritic and ideapropose recipes (from training.RECIPES) and launches the critic without a
dataset: its data is generated from environments/improve, so no episodes are frozen; a task that is not improve is refused."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client

from lab.runs.models import TrainingRun

pytestmark = pytest.mark.django_db


def test_run_form_offers_ideacritic_and_launches_it_without_a_dataset(role_users: dict[str, Any]) -> None:
    client = Client()
    client.force_login(role_users["owner"])
    html = client.get("/runs/").content.decode()
    assert "<option >ideacritic</option>" in html and "<code>label_threshold</code>" in html and "<code>sft_steps</code>" in html
    assert "<option >ideapropose</option>" in html and "<code>route_band</code>" in html
    config = 'tasks = ["improve/costly"]\nsft_steps = 2\nmax_steps = 3'
    response = client.post("/runs/new", {"project": "acme", "recipe": "ideacritic", "base_model": "org/tiny", "config": config})
    run = TrainingRun.objects.get()
    assert response.status_code == 302 and run.recipe == "ideacritic" and run.episode_ids == []
    assert run.config == {"tasks": ["improve/costly"], "sft_steps": 2, "max_steps": 3}
    refused = client.post(
        "/runs/new", {"project": "acme", "recipe": "ideacritic", "base_model": "org/tiny", "config": 'tasks = ["toolgym/lookup"]'}
    )
    assert "toolgym/lookup is not an improve task" in refused.content.decode() and TrainingRun.objects.count() == 1
