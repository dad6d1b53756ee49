"""The console's diagnosis edit page: its author or an owner changes it, and a verdict it had is cleared."""

from __future__ import annotations

from typing import Any

import pytest

from lab.diagnoses.models import Diagnosis
from lab.diagnoses.services import diagnosis_create

pytestmark = pytest.mark.django_db


@pytest.fixture
def verified(role_users: dict[str, Any], store_episodes: dict[str, Any]) -> Diagnosis:
    """An expert's diagnosis of the idle run, marked verified (the replay itself is tested in tests/lab/diagnoses)."""
    diagnosis = diagnosis_create(
        episode=store_episodes["idle"], step_index=2, category="premature_end", explanation="did nothing", author=role_users["expert"]
    )
    Diagnosis.objects.filter(pk=diagnosis.pk).update(verification="verified", verification_result={"verified": True})
    return Diagnosis.objects.get(pk=diagnosis.pk)


def test_its_author_edits_it_on_the_page_and_its_verification_is_cleared(
    login: Any, role_users: dict[str, Any], verified: Diagnosis
) -> None:
    client = login(role_users["expert"])
    form = client.get(f"/diagnoses/{verified.pk}/edit")
    assert form.status_code == 200 and "Saving a change clears this verification" in form.content.decode()
    saved = client.post(f"/diagnoses/{verified.pk}/edit", {"step_index": "3", "category": "premature_end", "explanation": "stopped early"})
    assert saved.status_code == 302 and saved["Location"] == f"/episodes/{verified.episode_id}/?at=3#diagnoses"
    stored = Diagnosis.objects.get(pk=verified.pk)
    assert (stored.step_index, stored.explanation, stored.verification, stored.verification_result) == (
        3,
        "stopped early",
        "unverified",
        None,
    )


def test_only_the_author_and_owners_may_open_or_post_the_edit(login: Any, role_users: dict[str, Any], verified: Diagnosis) -> None:
    for role in ("researcher", "viewer"):
        client = login(role_users[role])
        assert client.get(f"/diagnoses/{verified.pk}/edit").status_code == 403
        assert (
            client.post(f"/diagnoses/{verified.pk}/edit", {"step_index": "1", "category": "premature_end", "explanation": "x"}).status_code
            == 403
        )
    assert Diagnosis.objects.get(pk=verified.pk).verification == "verified"
    assert login(role_users["owner"]).get(f"/diagnoses/{verified.pk}/edit").status_code == 200
    viewer_page = login(role_users["researcher"]).get(f"/episodes/{verified.episode_id}/").content.decode()
    assert f"/diagnoses/{verified.pk}/edit" not in viewer_page and 'class="tag verification-verified"' in viewer_page
    assert f"/diagnoses/{verified.pk}/edit" in login(role_users["expert"]).get(f"/episodes/{verified.episode_id}/").content.decode()


def test_a_bad_edit_answers_field_by_field_and_changes_nothing(login: Any, role_users: dict[str, Any], verified: Diagnosis) -> None:
    client = login(role_users["owner"])
    response = client.post(f"/diagnoses/{verified.pk}/edit", {"step_index": "9999", "category": "premature_end", "explanation": "x"})
    assert response.status_code == 400 and "step 9999 does not exist" in response.content.decode()
    response = client.post(f"/diagnoses/{verified.pk}/edit", {"step_index": "two", "category": "premature_end", "explanation": "x"})
    assert response.status_code == 400 and "&#x27;two&#x27; is not a step number" in response.content.decode()
    stored = Diagnosis.objects.get(pk=verified.pk)
    assert (stored.step_index, stored.verification) == (2, "verified")
