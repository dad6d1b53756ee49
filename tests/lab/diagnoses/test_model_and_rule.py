from __future__ import annotations

from typing import Any

from lab.diagnoses.analysis import diagnosis_propose_model, diagnosis_propose_rule, episode_label_pivotal, episode_step_credit
from lab.diagnoses.models import Diagnosis, DiagnosisAttempt
from tests.lab.diagnoses.conftest import GOOD_ANSWER


def test_a_valid_model_answer_is_stored_as_a_model_diagnosis(tight_episode: Any, diagnoser: Any) -> None:
    attempt = diagnosis_propose_model(episode=tight_episode, agent=diagnoser("ledger-diagnoser-good"))
    assert attempt.ok and attempt.error == ""
    diagnosis = attempt.diagnosis
    assert (diagnosis.origin, diagnosis.author_model, diagnosis.step_index, diagnosis.category) == (
        "model",
        "ledger-diagnoser-good",
        1,
        "wrong_arguments",
    )
    assert diagnosis.correction == GOOD_ANSWER["correction"] and diagnosis.confidence == 0.9 and diagnosis.evidence_steps == [3]


def test_a_model_diagnosis_past_the_end_is_refused_and_recorded_as_a_bad_answer(tight_episode: Any, diagnoser: Any) -> None:
    attempt = diagnosis_propose_model(episode=tight_episode, agent=diagnoser("ledger-diagnoser-past-end"))
    assert not attempt.ok
    assert "step 40 is past the end (the episode has steps 0..3)" in attempt.error
    assert attempt.answer["tool_calls"][0]["arguments"]["step_index"] == 40
    assert Diagnosis.objects.filter(episode=tight_episode).count() == 0
    assert DiagnosisAttempt.objects.filter(episode=tight_episode, diagnosis__isnull=True).count() == 1


def test_the_propose_endpoint_answers_422_with_the_bad_answer(
    api: Any, alice: Any, project_a: Any, tight_episode: Any, diagnoser: Any
) -> None:
    diagnoser("ledger-diagnoser-past-end")
    diagnoser("ledger-diagnoser-good")
    client = api(alice, project_a)
    bad = client.post("/api/v1/diagnoses/propose/", {"episode": tight_episode.pk, "agent": "ledger-diagnoser-past-end"}, format="json")
    assert bad.status_code == 422
    assert bad.json()["error"]["code"] == "bad_answer" and "past the end" in bad.json()["error"]["message"]
    good = client.post("/api/v1/diagnoses/propose/", {"episode": tight_episode.pk, "agent": "ledger-diagnoser-good"}, format="json")
    assert good.status_code == 201 and good.json()["origin"] == "model"
    attempts = client.get(f"/api/v1/diagnoses/attempts/?episode={tight_episode.pk}").json()
    assert sorted(a["ok"] for a in attempts) == [False, True]


def test_viewers_cannot_ask_models_and_other_projects_see_nothing(
    api: Any, role_users: dict[str, Any], bob: Any, project_a: Any, project_b: Any, tight_episode: Any, diagnoser: Any
) -> None:
    diagnoser("ledger-diagnoser-good")
    body = {"episode": tight_episode.pk, "agent": "ledger-diagnoser-good"}
    assert api(role_users["viewer"], project_a).post("/api/v1/diagnoses/propose/", body, format="json").status_code == 403
    assert api(role_users["expert"], project_a).post("/api/v1/diagnoses/propose/", body, format="json").status_code == 403
    assert api(bob, project_b).post("/api/v1/diagnoses/propose/", body, format="json").status_code == 404
    assert api(bob, project_b).get(f"/api/v1/diagnoses/credit/?episode={tight_episode.pk}").status_code == 404


def test_a_rule_diagnosis_and_the_pivotal_label(store: Any) -> None:
    episode = store("ledger/loose")
    attempt = diagnosis_propose_rule(episode=episode, anchor="ledger-fixer")
    assert attempt.ok and attempt.diagnosis.origin == "rule" and attempt.diagnosis.step_index == 3
    assert attempt.diagnosis.category == "premature_end" and attempt.author_model == "rule:pivotal/ledger-fixer"
    label = episode_label_pivotal(episode=episode, anchor="ledger-fixer", search="linear")
    episode.refresh_from_db()
    assert episode.meta["pivotal"] == label and label["step"] == 3 and label["reason"] == "found"
    assert "pivotal" not in episode.meta["header"]  # a label beside the record, not in it


def test_step_credit_through_the_api(alice_api: Any, tight_episode: Any) -> None:
    answer = alice_api.get(f"/api/v1/diagnoses/credit/?episode={tight_episode.pk}&damping=0.5")
    assert answer.status_code == 200
    body = answer.json()
    assert body["edges"] == [[1, 3, 1]]
    credit = {row["index"]: row["credit"] for row in body["credit"]}
    # The walk goes 3 -> 1 with d = 1/2; 1 and 2 dangle. With s = (1/2 + (p1 + p2)/2) / 3 (the teleport share):
    #   p2 = p3 = s, p1 = s + p3/2 = 3s/2, and p1 + p2 + p3 = 1  =>  s = 2/7, p1 = 3/7.
    assert abs(credit[1] - 3 / 7) < 1e-9 and abs(credit[2] - 2 / 7) < 1e-9 and abs(credit[3] - 2 / 7) < 1e-9
    assert body["top_steps"] == [1]
    assert episode_step_credit(episode=tight_episode)["credit"][0]["index"] == 1
    assert alice_api.get(f"/api/v1/diagnoses/credit/?episode={tight_episode.pk}&damping=1.5").status_code == 400
