"""Seed the browser tests' database: a project, an expert and a researcher, and smart-triage's run of the
scenario the expert will play (so the leaderboard and compare have an anchor beside the human), and an API
key for the researcher (printed as API_KEY=...), with which the tests launch rollouts.

    python tests/browser/seed.py       # with DATABASE_URL pointing at the test's database file
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lab.settings")

import django  # noqa: E402

django.setup()

from django.contrib.auth import get_user_model  # noqa: E402

from environments import registry  # noqa: E402
from environments.runner import make_policy, run_episode  # noqa: E402
from lab.projects.services import api_key_issue, membership_set, project_create  # noqa: E402
from lab.trajectories.models import Provenance  # noqa: E402
from lab.trajectories.services import episodes_ingest  # noqa: E402

TASK, SEED = "storebench/cash-crunch", 0

project = project_create(name="Acme", slug="acme")
User = get_user_model()
for username, role in (("erin", "expert"), ("rita", "researcher")):
    user = User.objects.create_user(username=username, password=f"{username}-password")
    membership_set(project=project, user=user, role=role)
env = registry.make(TASK, seed=SEED)
record = run_episode(env, make_policy("smart-triage", env, SEED))
# Run here, by the server's own code: recorded, so it ranks on the leaderboard as the anchor.
[outcome] = episodes_ingest(project=project, records=[record], user=User.objects.get(username="rita"), provenance=Provenance.RECORDED)
print(f"seeded anchor episode {outcome.episode.pk}")
print("API_KEY=" + api_key_issue(project=project, user=User.objects.get(username="rita"), name="browser-test")[1])
