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


def test_content_problems_need_no_secret_and_never_echo_the_value():
    from training.federation.checks import content_problems

    assert content_problems(_skills("call lookup(item=<the asked thing>), then answer")) == []
    assert content_problems(_skills("ok", "Mail ops@acme.example.com", "Card 4929-1234-5678-9012", "key sk-abcdefghijklmnop1234")) == [
        "skills[1]: holds email-shaped text",
        "skills[2]: holds long_number-shaped text",
        "skills[3]: holds api_key-shaped text",
    ]
    assert content_problems(_skills("order 1234567 twice")) == []  # seven digits: an ordinary quantity or id
    assert content_problems(Artifact("skills", b'{"skills": "call"}', "a", 0, {})) == [
        'skills: the payload is not the JSON object {"skills": [text, ...]}'
    ]
    assert content_problems(Artifact("skills", b"\xff\xfe", "a", 0, {})) != []
    stats = Artifact("stats", json.dumps({"episodes": 4.0, "composite_mean": 0.91234567}).encode(), "a", 0, {})
    assert content_problems(stats) == []  # a float's digits are no long number: stats are numbers only
    assert content_problems(Artifact("stats", b'{"Note": "ops@acme.example.com", "x": NaN}', "a", 0, {})) == [
        "stats.Note: a statistic is a lower-case name with a finite number",
        "stats.x: a statistic is a lower-case name with a finite number",
    ]


def test_content_problems_of_adapters_read_safetensors_only():
    import torch

    from training.federation.checks import content_problems

    good = adapter_artifact({"layer.lora_A.weight": torch.zeros(2, 3)}, lora={"r": 2}, examples=1, source="a", round=0)
    assert content_problems(good) == []
    odd = adapter_artifact({"layer.weight": torch.zeros(2, dtype=torch.int64)}, lora={"r": 2}, examples=1, source="a", round=0)
    assert content_problems(odd) == ["adapter: 1 tensor(s) are not floating-point LoRA weights, e.g. 'layer.weight'"]
    chatty = adapter_artifact({"x.lora_B.weight": torch.zeros(1)}, lora={}, examples=1, source="ops@acme.example.com", round=0)
    assert content_problems(chatty) == ["adapter: its metadata holds email-shaped text"]
    pickle = Artifact("adapter", b"\x80\x04\x95" + b"\x00" * 32, "a", 0, {"examples": 1})
    assert content_problems(pickle) == ["adapter: the payload is not a safetensors file of LoRA tensors"]


def test_the_gate_refuses_pii_shaped_content_as_content_refused():
    with pytest.raises(ExportRefused) as refused:
        export_gate(_skills("Write to ops@acme.example.com"), canaries=CANARIES)
    assert refused.value.code == "content_refused" and "skills[0]: holds email-shaped text" in refused.value.message
