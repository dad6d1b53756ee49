"""RAISED's pairs (training/raised/pairs.py): the clean and injected variants hold the same actions, and their
action tokens line up turn by turn."""

from __future__ import annotations

import json

from environments.attacks import report_of
from environments.servicedesk.injections import wrap
from tests.training.raised.common import STYLE, visible_pair
from training.raised.pairs import agent_actions, align_turns, tokenized_pair


def test_the_two_variants_hold_the_same_actions_and_differ_in_the_planted_text():
    pair = visible_pair()
    assert agent_actions(pair.clean) == agent_actions(pair.injected) and len(agent_actions(pair.clean)) >= 4
    planted = wrap("direct", report_of(pair.injected["header"]["score"])["target"])
    assert planted in json.dumps(pair.injected["steps"]) and planted not in json.dumps(pair.clean["steps"])
    assert report_of(pair.clean["header"]["score"])["style"] == "none"


def test_the_students_action_tokens_line_up_with_the_teachers(tokenizer):
    clean, injected = tokenized_pair(visible_pair(), tokenizer, style=STYLE, max_tokens=4096)
    assert len(injected) > len(clean)  # the note lengthened a tool result
    index, mask = align_turns(injected, clean)
    positions = [p for p, m in enumerate(mask) if m]
    assert len(positions) == sum(clean.mask) == sum(injected.mask)
    # the teacher logits standing for the student's prediction of token p predict the same token in the teacher
    assert all(injected.input_ids[p] == clean.input_ids[index[p - 1] + 1] for p in positions)
    assert any(index[p - 1] != p - 1 for p in positions)  # later turns really are shifted
    same_index, same_mask = align_turns(clean, clean)
    assert same_mask == clean.mask and all(same_index[p - 1] == p - 1 for p, m in enumerate(clean.mask) if m)


def test_a_turn_cut_from_the_teacher_carries_no_loss(tokenizer):
    clean, injected = tokenized_pair(visible_pair(), tokenizer, style=STYLE, max_tokens=4096)
    last_step, start, end = injected.agent_spans[-1]
    _, mask = align_turns(injected, clean.truncate(clean.agent_spans[-1][1]))
    assert sum(mask[start:end]) == 0 and sum(mask) == sum(injected.mask) - (end - start)
