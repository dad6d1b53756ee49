from __future__ import annotations

import json

import pytest

from training.federation import checks
from training.federation.artifacts import Artifact, adapter_artifact
from training.federation.checks import AttributeCase, ExportRefused, ModelProbe, auc, export_check, export_gate
from training.federation.participants import fedgym_participants

CANARIES = {"catalogue.supplier_ref": "cnry5eed5eed5eed"}
CASES = [AttributeCase("lamp", "red"), AttributeCase("box", "blue"), AttributeCase("shoe", "red"), AttributeCase("cloud", "green")]
COLORS = ["red", "blue", "green", "white"]


def _skills(*lines: str) -> Artifact:
    return Artifact("skills", json.dumps({"skills": list(lines)}).encode(), "project-a", 0, {})


def test_the_gate_refuses_a_canary_naming_its_field_never_its_value():
    leaked = _skills("Lookup gives a supplier ref like CNRY5EED5EED5EED; answer with the color.")
    with pytest.raises(ExportRefused) as refused:
        export_gate(leaked, canaries=CANARIES)
    assert refused.value.code == "canary_found" and refused.value.fields == ["catalogue.supplier_ref"]
    assert "catalogue.supplier_ref" in refused.value.message and "cnry5eed" not in refused.value.message.lower()
    clean = export_gate(_skills("call lookup, then answer"), canaries=CANARIES)
    assert clean.passed and clean.canaries_found == [] and clean.leakage["canaries_found"] == 0.0


def test_a_canary_inside_adapter_bytes_is_found_too(tiny_path):
    import torch

    from training.modeling import load_model

    artifact = adapter_artifact({"w": torch.zeros(1)}, lora={"r": 1}, examples=1, source=CANARIES["catalogue.supplier_ref"], round=0)
    model, tokenizer = load_model(str(tiny_path), trainable=False)
    (person,) = fedgym_participants(["a"], records=2, holdout=2)
    probe = ModelProbe(model, tokenizer, person.records, person.holdout)
    result = export_check(artifact, canaries=CANARIES, probe=probe)
    assert not result.passed and result.canaries_found == ["catalogue.supplier_ref"]  # in the safetensors metadata


def test_auc_counts_lower_member_losses_and_ties_as_half():
    assert auc([0.1, 0.2], [0.3, 0.4]) == 1.0
    assert auc([0.3, 0.4], [0.1, 0.2]) == 0.0
    assert auc([0.2, 0.5], [0.2, 0.3]) == pytest.approx((0.5 + 1 + 0 + 0) / 4)


def test_text_attribute_attack_reads_values_named_beside_their_key_and_is_at_chance_without():
    chance = 0.5  # red is the most common true value: 2 of 4
    named = checks.attribute_inference_text("The lamp is red. The box is blue; cloud: white", CASES, COLORS)
    # lamp and box right, cloud wrong, shoe named nowhere -> the blind guess, right at chance
    assert named["attribute_accuracy"] == pytest.approx((1 + 1 + 0 + chance) / 4) and named["attribute_chance"] == chance
    silent = checks.attribute_inference_text("call lookup, then answer with the color", CASES, COLORS)
    assert silent["attribute_advantage"] == pytest.approx(0.0)


def test_model_attacks_on_the_real_tiny_model(tiny_path):
    from training.modeling import load_model

    model, tokenizer = load_model(str(tiny_path), trainable=False)
    (person,) = fedgym_participants(["a"], records=3, holdout=3)
    same = ModelProbe(model, tokenizer, person.records, person.records, person.canary_contexts)
    assert checks.membership_inference(same) == {"membership_auc": 0.5, "membership_accuracy": 0.5, "membership_advantage": 0.0}  # all ties
    assert checks.canaries_extracted(same, person.canaries) == []  # an untrained model does not know the canary
    result = checks.attribute_inference_model(same, person.attributes[:4])
    assert result["attribute_chance"] == pytest.approx(
        max(sum(c.true == t.true for c in person.attributes[:4]) for t in person.attributes[:4]) / 4
    )
    assert 0.0 <= result["attribute_accuracy"] <= 1.0
    assert {v for v, _ in person.attributes[0].candidates} == {"red", "green", "blue", "yellow", "black", "orange", "purple", "white"}
