"""lab.console.templatetags.console: how every page writes an interval."""

from __future__ import annotations

from lab.console.templatetags.console import interval


def test_an_interval_carries_its_n_and_one_without_bounds_says_only_n() -> None:
    assert interval(0.21, 0.65, 4) == '<span class="interval">[0.210, 0.650] <small class="muted">n=4</small></span>'
    assert interval(0.0945, 0.9055, 2, "percent") == '<span class="interval">[9%, 91%] <small class="muted">n=2</small></span>'
    assert interval(-1.0, 0.5, 3, "signed") == '<span class="interval">[-1.000, +0.500] <small class="muted">n=3</small></span>'
    assert interval(None, None, 1) == '<span class="interval muted">n=1</span>'


def test_a_transcript_never_shows_the_marks_an_environment_sends_itself() -> None:
    from environments.servicedesk.dialogue import STOP_MARK
    from lab.console.templatetags.console import spoken

    assert STOP_MARK == "###STOP###"
    assert spoken(f"Thanks, that's all. Goodbye! {STOP_MARK}") == "Thanks, that's all. Goodbye!"
    assert spoken({"not": "text"}) == {"not": "text"}
