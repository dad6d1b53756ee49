"""A universe: world + corpus + search index + question writer, built from a seed and cached per process.

Each split draws its universes from its own seed stream and its own name syllables (names.py), so train, dev
and test universes share neither seeds nor entity names. Universes are immutable once built; episodes keep
their own state and only read the universe, which is why one cached universe can serve many episodes.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass
from functools import cached_property, lru_cache

from environments.phantom.corpus import Article, write_corpus
from environments.phantom.questions import Question, QuestionWriter
from environments.phantom.search import SearchIndex
from environments.phantom.world import World, generate_world

GAZETTE_SHARE_PER_DISTRACTOR_LEVEL = 0.05


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any parts; stable across processes and Python versions (unlike hash())."""
    digest = hashlib.sha256("|".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


@dataclass(frozen=True)
class UniverseSpec:
    split: str
    index: int  # which universe of the split
    articles: int  # corpus size (entity articles + gazette articles)
    distractors: int  # 0-3: distractor sentences per article (at most) and gazette share
    alias_rate: float  # chance that an article mentions a related entity by alias

    @property
    def seed(self) -> int:
        return derive_seed("phantom-universe", self.split, self.index, self.articles, self.distractors, self.alias_rate)


class Universe:
    def __init__(self, spec: UniverseSpec) -> None:
        self.spec = spec
        n_gazette = min(spec.articles // 3, round(spec.articles * GAZETTE_SHARE_PER_DISTRACTOR_LEVEL * spec.distractors))
        self.world: World = generate_world(random.Random(derive_seed(spec.seed, "world")), spec.split, spec.articles - n_gazette)
        self.articles: list[Article] = write_corpus(
            self.world,
            random.Random(derive_seed(spec.seed, "corpus")),
            distractors=spec.distractors,
            alias_rate=spec.alias_rate,
            n_gazette=n_gazette,
        )
        self.by_id: dict[str, Article] = {a.id: a for a in self.articles}
        self.article_of: dict[str, str] = {a.subject: a.id for a in self.articles if a.subject is not None}
        self.writer = QuestionWriter(self.world.entities, self.article_of, _constrainable_people(self.world))

    @cached_property
    def index(self) -> SearchIndex:
        """Built on first search, so question-only uses (benchmarks, answerability tests) skip its cost."""
        return SearchIndex([f"{a.title} {a.text}" for a in self.articles])

    def question(self, rng: random.Random, *, hops: int, comparison_rate: float, constraint_rate: float) -> Question:
        return self.writer.write(rng, hops=hops, comparison_rate=comparison_rate, constraint_rate=constraint_rate)

    def search(self, query: str, k: int) -> list[tuple[Article, float]]:
        return [(self.articles[i], score) for i, score in self.index.search(query, k)]


def _constrainable_people(world: World) -> list[str]:
    """People who share a surname with someone, but no one else has both their surname and occupation."""
    by_family: dict[str, list[str]] = {}
    by_pair: dict[tuple[str, str], int] = {}
    for person in world.of("person"):
        family, occupation = str(person.attrs["family"]), str(person.attrs["occupation"])
        by_family.setdefault(family, []).append(person.id)
        by_pair[(family, occupation)] = by_pair.get((family, occupation), 0) + 1
    return [
        p.id
        for p in world.of("person")
        if len(by_family[str(p.attrs["family"])]) > 1 and by_pair[(str(p.attrs["family"]), str(p.attrs["occupation"]))] == 1
    ]


@lru_cache(maxsize=6)
def load_universe(spec: UniverseSpec) -> Universe:
    """The universe for `spec`, built once per process (a 10,000-article universe takes a few seconds)."""
    return Universe(spec)
