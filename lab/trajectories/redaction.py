"""The redaction every stored step goes through: uploads (lab.trajectories.imports) and live steps from rollouts,
human play and verification replays (services.episode_append_step) use the same patterns.

Token ids are the text they were sampled as, secret included, and the lab holds no tokenizer to derive them
again from the redacted text. So a redacted step that carries token ids loses them (with their logprobs) and is
marked `meta.training_unusable = "redacted"`: training masks its tokens instead of learning the `[REDACTED:...]`
placeholder as if the model had sampled it. Later steps keep their own completion ids but lose their prompt ids,
which hold the earlier, secret text; training then renders their prompts from the redacted messages.
"""

from __future__ import annotations

import functools
from typing import cast

from django.conf import settings

from environments.records import Step
from lab import ingest
from lab.ingest.redaction import SAMPLED_FIELDS, step_unusable_for_training


@functools.cache
def _redactor(extra: tuple[str, ...]) -> ingest.Redactor:
    return ingest.Redactor([*ingest.DEFAULT_REDACTION_PATTERNS, *((f"custom_{i}", p) for i, p in enumerate(extra))])


def redactor_configured() -> ingest.Redactor:
    """The default secret patterns plus PRACTICUM_REDACTION_PATTERNS; compiled once per pattern set."""
    return _redactor(tuple(settings.PRACTICUM_REDACTION_PATTERNS))


def step_redact(*, step: Step, after_redacted_step: bool = False) -> tuple[Step, int]:
    """The step with its secrets replaced, and how many were. `after_redacted_step`: an earlier step of the same
    episode was redacted, so this step's prompt ids would still spell that secret out."""
    redacted, count = redactor_configured().redact(step)
    assert isinstance(redacted, dict), "a step is a JSON object"
    if count and any(redacted.get(name) is not None for name in SAMPLED_FIELDS):
        redacted = step_unusable_for_training(redacted)
    elif after_redacted_step and redacted.get("prompt_token_ids") is not None:
        redacted = {k: v for k, v in redacted.items() if k != "prompt_token_ids"}
    return cast(Step, redacted), count  # the redactor rewrites strings, so the step keeps its shape
