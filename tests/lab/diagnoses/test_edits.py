"""Editing a diagnosis: only its author or a project owner may, and a changed diagnosis loses its verdict."""

from __future__ import annotations

from typing import Any

import pytest

from lab.diagnoses import verification
from lab.diagnoses.models import Diagnosis
from lab.diagnoses.services import diagnosis_update
from lab.diagnoses.verification import diagnosis_verify
from lab.trajectories.models import Episode

pytestmark = pytest.mark.django_db
FIX = {"name": "add", "arguments": {"key": "a", "amount": 3}}
BODY = {"step_index": 1, "category": "wrong_arguments", "explanation": "added to b", "correction": FIX}


@pytest.fixture
def by_expert(api: Any, role_users: dict[str, Any], project_a: Any, tight_episode: Any) -> Diagnosis:
    response = api(role_users["expert"], project_a).post("/api/v1/diagnoses/", {**BODY, "episode": tight_episode.pk}, format="json")
    assert response.status_code == 201, response.json()
    return Diagnosis.objects.get(pk=response.json()["id"])


def _patch(api: Any, user: Any, project: Any, diagnosis: Diagnosis, body: dict[str, Any]) -> Any:
    return api(user, project).patch(f"/api/v1/diagnoses/{diagnosis.pk}/", body, format="json")


def test_its_author_edits_a_diagnosis_and_other_annotators_may_not(
    api: Any, role_users: dict[str, Any], project_a: Any, by_expert: Diagnosis
) -> None:
    refused = _patch(api, role_users["researcher"], project_a, by_expert, {"explanation": "rewritten by someone else"})
    assert refused.status_code == 403
    assert refused.json()["error"]["code"] == "forbidden" and f"diagnosis {by_expert.pk}" in refused.json()["error"]["message"]
    assert Diagnosis.objects.get(pk=by_expert.pk).explanation == "added to b"
    own = _patch(api, role_users["expert"], project_a, by_expert, {"explanation": "added the amount to b instead of a"})
    assert own.status_code == 200 and own.json()["explanation"] == "added the amount to b instead of a"


def test_an_owner_edits_anyones_diagnosis_and_only_they_or_the_author_delete_it(
    api: Any, role_users: dict[str, Any], project_a: Any, by_expert: Diagnosis
) -> None:
    edited = api(role_users["owner"], project_a).put(
        f"/api/v1/diagnoses/{by_expert.pk}/", {**BODY, "episode": by_expert.episode_id, "category": "premature_end"}, format="json"
    )
    assert edited.status_code == 200 and Diagnosis.objects.get(pk=by_expert.pk).category == "premature_end"
    assert api(role_users["researcher"], project_a).delete(f"/api/v1/diagnoses/{by_expert.pk}/").status_code == 403
    assert api(role_users["owner"], project_a).delete(f"/api/v1/diagnoses/{by_expert.pk}/").status_code == 204
    assert not Diagnosis.objects.filter(pk=by_expert.pk).exists()


def test_editing_a_verified_diagnosis_clears_its_verification(
    api: Any, role_users: dict[str, Any], project_a: Any, by_expert: Diagnosis
) -> None:
    verified = diagnosis_verify(diagnosis=by_expert)
    children = set(verified.child_episodes.values_list("pk", flat=True))
    assert verified.verification == "verified" and len(children) == 2
    assert set(Episode.objects.filter(pk__in=children).values_list("provenance", flat=True)) == {"recorded"}  # the server's branches
    response = _patch(
        api, role_users["expert"], project_a, by_expert, {"correction": {"name": "add", "arguments": {"key": "a", "amount": 4}}}
    )
    assert response.status_code == 200
    body = response.json()
    assert (body["verification"], body["verification_result"], body["child_episodes"]) == ("unverified", None, [])
    stored = Diagnosis.objects.get(pk=by_expert.pk)
    assert (stored.verification, stored.verification_result, stored.child_episodes.count()) == ("unverified", None, 0)
    assert Episode.objects.filter(pk__in=children).count() == 2  # the branch episodes stay; they no longer vouch for it


def test_an_edit_that_changes_nothing_or_is_refused_keeps_the_verdict(
    api: Any, role_users: dict[str, Any], project_a: Any, by_expert: Diagnosis
) -> None:
    diagnosis_verify(diagnosis=by_expert)
    same = _patch(api, role_users["expert"], project_a, by_expert, {"explanation": "added to b"})
    assert same.status_code == 200 and same.json()["verification"] == "verified"
    bad = _patch(api, role_users["expert"], project_a, by_expert, {"step_index": 999})
    assert bad.status_code == 400 and bad.json()["error"]["path"] == "step_index"
    assert Diagnosis.objects.get(pk=by_expert.pk).verification == "verified"
    refused = _patch(api, role_users["owner"], project_a, by_expert, {"explanation": "   "})
    assert refused.status_code == 400 and "explanation" in refused.json()["error"]["fields"]
    assert Diagnosis.objects.get(pk=by_expert.pk).verification == "verified"


def test_an_edit_made_while_the_branches_run_leaves_the_diagnosis_unverified(
    role_users: dict[str, Any], by_expert: Diagnosis, monkeypatch: Any
) -> None:
    real = verification.verify_correction

    def edited_meanwhile(*args: Any, **kwargs: Any) -> Any:
        outcome = real(*args, **kwargs)
        other = Diagnosis.objects.get(pk=by_expert.pk)  # another request's copy
        diagnosis_update(diagnosis=other, user=role_users["expert"], role="expert", changes={"step_index": 0})
        return outcome

    monkeypatch.setattr(verification, "verify_correction", edited_meanwhile)
    result = diagnosis_verify(diagnosis=by_expert)
    assert (result.verification, result.verification_result, result.step_index) == ("unverified", None, 0)
    assert Diagnosis.objects.get(pk=by_expert.pk).child_episodes.count() == 0
