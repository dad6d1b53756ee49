"""Made-up names from syllables, with the first syllable drawn from a per-split inventory.

Every name a universe coins starts with a syllable that belongs to its split only, so an entity name seen in a
train universe can never reappear in a dev or test universe: a model cannot pass dev by remembering train.
"""

from __future__ import annotations

import random

SPLITS: tuple[str, ...] = ("train", "dev", "test")

_ONSETS = ("b", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "br", "dr", "kr", "st", "th", "tr", "vel", "sh")
_VOWELS = ("a", "e", "i", "o", "u", "ae", "ei", "ou")
_CODAS = ("", "", "n", "r", "l", "s", "th", "k", "m", "nd", "rn")
_ALL_SYLLABLES: tuple[str, ...] = tuple(o + v for o in _ONSETS for v in _VOWELS)
# Interleaved rather than in blocks, so each split gets every onset and the names sound alike across splits.
_FIRST_SYLLABLES: dict[str, tuple[str, ...]] = {split: _ALL_SYLLABLES[i :: len(SPLITS)] for i, split in enumerate(SPLITS)}

CITY_SUFFIXES = ("", "", "", "mere", "holm", "ford", "haven", "gard", "wick", "stead", "port", "vale")
COUNTRY_SUFFIXES = ("ia", "and", "ar", "ova", "istan", "ene")

ADJECTIVES = (
    "Silent",
    "Glass",
    "Amber",
    "Hollow",
    "Northern",
    "Last",
    "Crimson",
    "Quiet",
    "Iron",
    "Paper",
    "Salt",
    "Winter",
    "Distant",
    "Golden",
    "Broken",
    "Seventh",
    "Pale",
    "Burning",
    "Lesser",
    "Wandering",
    "Hidden",
    "Copper",
    "Velvet",
    "Ashen",
)
NOUNS = (
    "Harbour",
    "Orchard",
    "Lantern",
    "Meridian",
    "Cartographer",
    "Tide",
    "Archive",
    "Garden",
    "Compass",
    "Bell",
    "Bridge",
    "Crossing",
    "Hours",
    "Letters",
    "Mirror",
    "Observatory",
    "River",
    "Season",
    "Tower",
    "Voyage",
    "Loom",
    "Chorus",
    "Atlas",
    "Furnace",
)


def first_syllables(split: str) -> tuple[str, ...]:
    assert split in _FIRST_SYLLABLES, f"unknown split {split!r}"
    return _FIRST_SYLLABLES[split]


def coin_word(rng: random.Random, split: str, syllables: int = 2) -> str:
    """One capitalised made-up word whose first syllable belongs to `split`."""
    parts = [rng.choice(_FIRST_SYLLABLES[split])]
    parts += [rng.choice(_ALL_SYLLABLES) for _ in range(syllables - 1)]
    return ("".join(parts) + rng.choice(_CODAS)).capitalize()


class NameBook:
    """Hands out names no other entity of the universe holds, and remembers every alias it registered.

    An alias resolves to exactly one entity, so an article that mentions an entity by alias stays answerable.
    """

    def __init__(self, rng: random.Random, split: str) -> None:
        self.rng = rng
        self.split = split
        self.taken: set[str] = set()

    def claim(self, *names: str) -> bool:
        """Take all of `names` at once if none is taken yet (case-insensitive)."""
        keys = [n.lower() for n in names]
        if len(set(keys)) != len(keys) or any(k in self.taken for k in keys):
            return False
        self.taken.update(keys)
        return True

    def unique(self, make: object, attempts: int = 200) -> tuple[str, ...]:
        """Call `make()` (returning a tuple of names) until its names are all free, then claim them."""
        assert callable(make)
        for _ in range(attempts):
            names = make()
            if self.claim(*names):
                return tuple(names)
        raise RuntimeError(f"name space exhausted after {attempts} attempts in split {self.split!r}")
