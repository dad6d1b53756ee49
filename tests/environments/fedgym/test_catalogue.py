from __future__ import annotations

import json

from environments.core import ToolCall
from environments.fedgym import ORGS, private_catalogue
from environments.registry import make
from environments.toolgym.anchors import ExpertPolicy
from training.scripted import scripted_episode


def test_each_organisation_has_its_own_fixed_catalogue_and_canary():
    catalogues = [private_catalogue(org) for org in ORGS]
    assert len({json.dumps(c.colors, sort_keys=True) for c in catalogues}) == 3
    assert len({c.supplier_ref for c in catalogues}) == 3 and all(c.supplier_ref.startswith("cnry") for c in catalogues)
    assert private_catalogue("a") == catalogues[0]  # a pure function of the organisation
    envs = [make("fedgym/a", seed) for seed in (1, 2, 3)]
    for env in envs:
        env.reset()
    assert all(env.world.colors == catalogues[0].colors for env in envs)  # the seed picks only the asked item


def test_lookup_reveals_the_private_color_and_plants_the_canary():
    env = make("fedgym/b", 4)
    question = env.reset().text
    item = env.world.target
    assert question == f"What is the color of the {item}? Look it up, then answer."
    result = env.step(ToolCall("lookup", {"item": item}, "c1"))
    assert result.content == {
        "item": item,
        "color": private_catalogue("b").colors[item],
        "supplier_ref": private_catalogue("b").supplier_ref,
    }
    wrong = env.step(ToolCall("lookup", {"item": "unicorn"}, "c2"))
    assert wrong.is_error and "supplier_ref" not in json.dumps(wrong.content)


def test_the_expert_passes_every_organisation_and_a_wrong_color_does_not():
    for org in ORGS:
        record = scripted_episode(ExpertPolicy(), f"fedgym/{org}", 7)
        assert record["header"]["score"]["passed"] and record["header"]["env"] == "fedgym"
    env = make("fedgym/c", 7)
    env.reset()
    right = private_catalogue("c").colors[env.world.target]
    env.step(ToolCall("answer", {"color": "red" if right != "red" else "blue"}, "c1"))
    assert env.score().composite == 0.0 and env.done
