"""The episode viewer shows a step's screenshot as a lazy thumbnail linking to the full picture; a malformed
reference in an uploaded step shows nothing (and never breaks the page)."""

from __future__ import annotations

from typing import Any

import pytest

from environments.trajectory import make_step, new_record
from lab.screenshots.services import screenshot_store
from lab.trajectories.services import episodes_ingest
from tests.lab.screenshots.test_services import png

pytestmark = pytest.mark.django_db


def test_steps_with_a_screenshot_show_it_lazily_and_others_do_not(client: Any, project_a: Any, role_users: dict[str, Any]) -> None:
    shot = screenshot_store(project=project_a, png=png("orange"))
    metas = [{"screenshot": shot.sha256}, {}, {"screenshot": "javascript:alert(1)"}, {"screenshot_skipped": "the budget is spent"}]
    steps = [
        make_step(
            index=i,
            tool_calls=[{"id": f"c{i}", "name": "click", "arguments": {"x": i, "y": 1}}],
            results=[{"call_id": f"c{i}", "content": "ok", "is_error": False}],
            meta=meta,
        )
        for i, meta in enumerate(metas)
    ]
    record = new_record(header={"env": "toyenv", "task": "shots", "seed": 0, "source": "upload", "policy": {"name": "v"}}, steps=steps)
    episode = episodes_ingest(project=project_a, records=[record], user=role_users["owner"])[0].episode
    client.force_login(role_users["viewer"])
    html = client.get(f"/episodes/{episode.pk}/").content.decode()
    url = f"/api/v1/screenshots/{shot.sha256}?project={project_a.pk}"
    assert html.count('class="step-shot"') == 1 and f'<a class="step-shot" href="{url}" target="_blank"' in html
    assert f'<img src="{url}" loading="lazy" decoding="async" width="320" height="200" alt="Screenshot after step 0">' in html
    assert "javascript:" not in html  # step 2's reference is no digest: no link, no picture
    assert "No screenshot: the budget is spent" in html
    assert client.get(url).content == png("orange")  # the thumbnail loads for a viewer
