"""Seeded drift: what makes yesterday's knowledge of an app wrong today.

    drift = drift_for(seed, "high")    # per app: version, ad, A/B variant; plus personalisation

* versions: version 2 of an app renames controls (new widget id and name: "Reply" becomes "Respond") and moves
  its toolbar from the top of the window to the bottom;
* ads: a promotion (states {"ad"}) over the app's controls until its close button is clicked: a modal in the
  middle, a banner over the toolbar, or a toast that fades after TOAST_TICKS steps;
* A/B variants: variant B puts the sidebar on the right and lists in reverse;
* personalisation: the taskbar orders apps by the user's (seeded) habits; the shop lists "recommended" first.

Level "none" is the reference desktop; "low" and "high" draw each of these with rising probability. An agent
that stores element ids or coordinates from one desktop finds them stale on another: `robustness` compares
scores with and without drift.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from statistics import fmean

from environments.desktop.state import APPS

LEVELS = ("none", "low", "high")
TOAST_TICKS = 3
AD_KINDS = ("modal", "banner", "toast")
# (app key, version 2's key and name): version 2 renames these controls.
RENAMES: dict[str, tuple[str, str]] = {
    "files.move": ("files.relocate", "Relocate"),
    "files.open": ("files.view", "View"),
    "files.move_ok": ("files.relocate_ok", "Relocate here"),
    "mail.reply": ("mail.respond", "Respond"),
    "mail.send": ("mail.dispatch", "Send now"),
    "mail.compose": ("mail.new", "New message"),
    "calendar.new": ("calendar.add", "Add event"),
    "calendar.save": ("calendar.create", "Create"),
    "settings.tab.privacy": ("settings.tab.security", "Privacy & security"),
    "shop.buy": ("shop.checkout", "Add to order"),
    "shop.search": ("shop.find", "Find"),
    "table.save": ("table.store", "Save changes"),
}
_ODDS = {"none": (0.0, 0.0, 0.0, 0.0), "low": (0.3, 0.3, 0.3, 0.3), "high": (0.8, 0.8, 0.5, 1.0)}  # version 2, ad, variant B, personal


@dataclass(frozen=True)
class Drift:
    level: str = "none"
    versions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(APPS, 1))
    ads: dict[str, str] = field(default_factory=dict)  # app -> ad kind
    variants: dict[str, str] = field(default_factory=lambda: dict.fromkeys(APPS, "A"))
    launcher: tuple[str, ...] = APPS
    recommended: bool = False

    def control(self, key: str, name: str) -> tuple[str, str]:
        """The widget id and name a control of this key has on this desktop."""
        if self.versions.get(key.split(".", 1)[0], 1) == 2 and key in RENAMES:
            return RENAMES[key]
        return key, name

    def describe(self) -> dict[str, object]:
        return {
            "level": self.level,
            "versions": self.versions,
            "ads": self.ads,
            "variants": self.variants,
            "launcher": list(self.launcher),
            "recommended": self.recommended,
        }


def drift_for(seed: int, level: str) -> Drift:
    assert level in LEVELS, f"drift level {level!r} is not one of {LEVELS}"
    if level == "none":
        return Drift()
    rng = random.Random(f"desktop-drift-{seed}-{level}")
    version, ad, variant, personal = _ODDS[level]
    versions = {app: 2 if rng.random() < version else 1 for app in APPS}
    ads = {app: rng.choice(AD_KINDS) for app in APPS if rng.random() < ad}
    variants = {app: "B" if rng.random() < variant else "A" for app in APPS}
    launcher = tuple(rng.sample(APPS, len(APPS))) if rng.random() < personal else APPS
    return Drift(level, versions, ads, variants, launcher, recommended=rng.random() < personal)


def robustness(reference: list[float], drifted: list[float]) -> float:
    """Mean score under drift over the mean score without, capped at 1 (1: drift costs nothing; 0: all lost).

    Both lists score the same policy on the same tasks and seeds; a policy that scores 0 without drift has no
    robustness to measure and gets 0."""
    if not reference or not drifted or fmean(reference) == 0:
        return 0.0
    return min(1.0, fmean(drifted) / fmean(reference))
