"""The fixed failure taxonomy, with the definitions shown beside the diagnosis form and given to diagnosing models.

Pure data so that environments/ (model and rule diagnosers) and lab/ (the Diagnosis model) share one list.
"""

from __future__ import annotations

CATEGORIES: dict[str, str] = {
    "misread_observation": "The agent misread or misremembered what a tool result or the feed said.",
    "wrong_tool": "The agent used a tool that cannot achieve what it intended.",
    "wrong_arguments": "The right tool, called with wrong or harmful arguments.",
    "ignored_alert": "The agent ignored a warning, alert or news item that called for action.",
    "planning_error": "The plan itself was wrong: bad priorities, timing or trade-offs.",
    "loop_repetition": "The agent repeated the same actions without progress.",
    "premature_end": "The agent ended the episode or stopped acting too early.",
    "environment_error": "The environment or infrastructure failed, not the agent.",
    "task_bug": "The task, its scoring or its verifier is wrong.",
    "other": "None of the above; the explanation says what.",
}

AGENT_SOURCES: tuple[str, ...] = ("agent", "human")  # steps that are decisions a diagnosis can point at
