from __future__ import annotations

import hashlib
import json

import torch

from environments.fedgym import private_catalogue
from environments.toolgym.anchors import ExpertPolicy
from training.federation.artifacts import adapter_artifact, adapter_tensors, distill_skill, skills_artifact, skills_of, stats_artifact
from training.federation.redact import PrivateRedactor
from training.scripted import scripted_episode

SKILL = (
    "To answer 'What is the color of the <asked thing>? Look it up, then answer.': call lookup(item=<the asked thing in the "
    "question>); then call answer(color=<the color field of lookup's result>)."
)


def test_a_skill_is_the_procedure_with_every_value_replaced_by_where_it_came_from():
    record = scripted_episode(ExpertPolicy(), "fedgym/a", 3)
    catalogue = private_catalogue("a")
    skill = distill_skill(record)
    assert skill == SKILL
    assert catalogue.supplier_ref not in skill and not any(f" {c} " in skill or f"={c}" in skill for c in catalogue.colors.values())
    failed = {**record, "header": {**record["header"], "score": {"composite": 0.3, "passed": False}}}
    assert distill_skill(failed) is None


def test_skills_artifact_deduplicates_and_has_a_checkable_manifest():
    records = [scripted_episode(ExpertPolicy(), f"fedgym/{org}", seed) for org in "ab" for seed in range(3)]
    artifact = skills_artifact(records, redactor=PrivateRedactor(private_catalogue("a").canaries), source="project-a", round=2)
    assert skills_of(artifact) == [SKILL]
    manifest = artifact.manifest
    assert manifest["kind"] == "skills" and manifest["source"] == "project-a" and manifest["round"] == 2
    assert manifest["bytes"] == len(artifact.payload) and manifest["sha256"] == hashlib.sha256(artifact.payload).hexdigest()


def test_the_redactor_replaces_private_values_whole_words_and_credentials():
    redactor = PrivateRedactor([("catalogue.supplier_ref", "cnry123abc"), ("catalogue.color", "red")])
    text, count = redactor.redact("ref CNRY123ABC is red, not reddish; api_key=abcd1234efgh")
    assert text == "ref <catalogue.supplier_ref> is <catalogue.color>, not reddish; <redacted:assignment>" and count == 3


def test_the_redactor_replaces_pii_shapes_and_shapes_found_names_them():
    from training.federation.redact import shapes_found

    text, count = PrivateRedactor([]).redact("mail ops@acme.example.com or call +1 555 123 4567; order 42, rate 0.12345678")
    assert text == "mail <redacted:email> or call <redacted:long_number>; order 42, rate 0.12345678" and count == 2
    assert shapes_found("mail ops@acme.example.com, account 12345678") == ["email", "long_number"] and shapes_found(text) == []


def test_adapter_artifact_is_safetensors_bytes_that_round_trip():
    state = {"layer.lora_A.weight": torch.arange(6, dtype=torch.float32).view(2, 3)}
    artifact = adapter_artifact(state, lora={"r": 2, "alpha": 16}, examples=40, source="b", round=0)
    assert artifact.manifest["examples"] == 40 and artifact.manifest["lora"] == {"r": 2, "alpha": 16}
    assert torch.equal(adapter_tensors(artifact)["layer.lora_A.weight"], state["layer.lora_A.weight"])
    assert not artifact.payload.startswith(b"\x80")  # not a pickle


def test_stats_are_counts_and_means_only():
    records = [scripted_episode(ExpertPolicy(), "fedgym/c", seed) for seed in range(4)]
    stats = json.loads(stats_artifact(records, source="c", round=0).payload)
    assert stats == {"episodes": 4.0, "passed": 4.0, "composite_mean": 1.0, "calls_mean": 2.0}
