"""The few rules both sides of a conversation share: what counts as asking for confirmation, as a yes or a no,
as asking for a fact, and the marks a user ends the conversation with.

The environment judges confirmations with the same functions the rule-based user answers them with, so the
two never disagree; a model user only needs to answer "yes" or "no" plainly.
"""

from __future__ import annotations

import re

# A user's message ends the conversation when it carries this mark (τ²-bench's convention); the rule user adds
# it after styling, so no behaviour pattern can garble it.
STOP_MARK = "###STOP###"

_CONFIRM = re.compile(r"\b(confirm|shall i|should i|do you want me to|would you like me to|go ahead|proceed|ok to)\b", re.I)
_YES = re.compile(r"^\W*(yes|yeah|yep|yup|sure|ok|okay|correct|confirmed?|please do|go ahead|do it|that'?s right|absolutely)\b", re.I)
_NO = re.compile(r"^\W*(no|nope|don'?t|do not|cancel that|never ?mind|stop)\b", re.I)
_CLOSING = re.compile(r"\b(anything else|something else|all set|have a (good|nice|great) (day|evening)|goodbye)\b", re.I)

# Fact keys and the words an agent uses when it asks for them.
FACT_CUES: dict[str, tuple[str, ...]] = {
    "phone": ("phone number", "mobile number", "number on the account", "your number"),
    "date_of_birth": ("date of birth", "birthday", "birth date", "dob"),
    "postcode": ("postcode", "post code", "zip"),
    "order_id": ("order number", "order id", "order reference", "which order"),
    "card_last4": ("last four", "last 4", "which card", "payment method", "which account"),
    "new_email": ("new email", "email address", "which email"),
    "plan": ("which plan", "what plan"),
}


def asks_confirmation(text: str) -> bool:
    return "?" in text and bool(_CONFIRM.search(text))


def affirmative(text: str) -> bool:
    return bool(_YES.search(text)) and not negative(text)


def negative(text: str) -> bool:
    return bool(_NO.search(text))


def closing_question(text: str) -> bool:
    return bool(_CLOSING.search(text))


def asked_keys(text: str) -> list[str]:
    lowered = text.lower()
    return [key for key, cues in FACT_CUES.items() if any(re.search(rf"\b{re.escape(cue)}\b", lowered) for cue in cues)]


def ends_conversation(text: str) -> bool:
    return STOP_MARK in text
