"""Articles about the entities of a world, written from templates.

Each entity gets one article stating all of its facts, in shuffled order and varied phrasing, mentioning related
entities by name or by alias. Distractors make shallow matching fail: true facts about namesakes and other
entities inside articles, and gazette articles that list facts about unrelated entities. Every stated fact is
recorded on the article as (entity id, field), which is what the answerability tests check against.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

from environments.phantom.names import coin_word
from environments.phantom.templates import (
    COMMON_OPENINGS,
    DISTRACTOR_OPENERS,
    FACT_TEMPLATES,
    LEADS,
    NAMESAKE_TEMPLATES,
    SUBJECT_REFERENCES,
)
from environments.phantom.world import ATTRIBUTES, KINDS, Entity, World

# Attributes the lead sentence states, so they get no sentence of their own.
LEAD_FIELDS: dict[str, tuple[str, ...]] = {"person": ("birth_year", "occupation"), "work": ("form",)}


@dataclass
class Article:
    id: str  # "a00042"; ids are assigned after shuffling, so they say nothing about the subject
    title: str
    text: str
    subject: str | None  # entity id, None for gazette articles
    facts: list[tuple[str, str]] = field(default_factory=list)  # (entity id, field) stated in the text


def render_value(entity: Entity, name: str, rng: random.Random) -> str:
    value = entity.attrs[name]
    if name == "population" and rng.random() < 0.5:
        return f"{int(value):,}"
    return str(value)


def mention(entity: Entity, rng: random.Random, alias_rate: float) -> str:
    """How one article names another entity: its name, or with probability `alias_rate` one of its aliases."""
    names = entity.aliases if entity.kind != "country" else []  # a demonym is an adjective: only {A} uses it
    text = rng.choice(names) if names and rng.random() < alias_rate else entity.name
    return f"the {text}" if entity.kind == "event" else text


def fact_fields(entity: Entity) -> list[str]:
    """The fields an article states as separate sentences (person birth year and occupation are in the lead)."""
    attrs = [a for a in ATTRIBUTES[entity.kind] if a not in LEAD_FIELDS.get(entity.kind, ())]
    return attrs + sorted(entity.rels)


def fact_sentence(world: World, entity: Entity, name: str, subject: str, rng: random.Random, alias_rate: float) -> str:
    template = rng.choice(FACT_TEMPLATES[(entity.kind, name)])
    slots: dict[str, str] = {"S": subject}
    if name in entity.rels:
        target = world.entities[entity.rels[name]]
        slots["O"] = mention(target, rng, alias_rate)
        if target.kind == "country":
            slots["A"] = target.aliases[0]
    else:
        slots["V"] = render_value(entity, name, rng)
        if entity.kind == "country":
            slots["A"] = entity.aliases[0]
    return _capitalise(template.format(**slots))


_A_BEFORE_VOWEL = re.compile(r"\ba (?=[aeioAEIO])")  # no "u": "a university" keeps its "a"


def _capitalise(sentence: str) -> str:
    sentence = _A_BEFORE_VOWEL.sub("an ", sentence)
    return sentence[0].upper() + sentence[1:]


def _subject_reference(entity: Entity, rng: random.Random) -> str:
    if rng.random() < 0.4:
        return mention(entity, rng, alias_rate=0.5)
    return rng.choice(SUBJECT_REFERENCES[entity.kind]).format(**{k: v for k, v in entity.attrs.items()})


def _distractor(
    world: World, entity: Entity, rng: random.Random, alias_rate: float, namesakes: list[str]
) -> tuple[str, list[tuple[str, str]]]:
    """One true sentence about another entity: a namesake when there is one, else a random entity."""
    others = [n for n in namesakes if n != entity.id]
    if others and rng.random() < 0.6:
        other = world.entities[rng.choice(others)]
        template = rng.choice(NAMESAKE_TEMPLATES)
        text = _capitalise(
            template.format(S=entity.attrs["family"], P=other.name, occupation=other.attrs["occupation"], year=other.attrs["birth_year"])
        )
        return text, [(other.id, "occupation"), (other.id, "birth_year")]
    kind = rng.choice(KINDS)
    other = world.entities[rng.choice(world.by_kind[kind])]
    name = rng.choice(fact_fields(other))
    sentence = fact_sentence(world, other, name, mention(other, rng, alias_rate), rng, alias_rate)
    opener = rng.choice(DISTRACTOR_OPENERS)
    if opener and sentence.split(" ", 1)[0] in COMMON_OPENINGS:
        sentence = sentence[0].lower() + sentence[1:]
    elif opener:
        opener = ""  # never lower-case a proper name to fit an opener
    return opener + sentence, [(other.id, name)]


def entity_article(
    world: World, entity: Entity, rng: random.Random, distractors: int, alias_rate: float, families: dict[str, list[str]]
) -> Article:
    lead = rng.choice(LEADS[entity.kind]).format(N=entity.name, **{k: v for k, v in entity.attrs.items()})
    facts: list[tuple[str, str]] = [(entity.id, name) for name in LEAD_FIELDS.get(entity.kind, ())]
    fields = fact_fields(entity)
    rng.shuffle(fields)
    sentences = []
    for name in fields:
        sentences.append(fact_sentence(world, entity, name, _subject_reference(entity, rng), rng, alias_rate))
        facts.append((entity.id, name))
    namesakes = families.get(str(entity.attrs.get("family", "")), []) if entity.kind == "person" else []
    for _ in range(rng.randint(0, distractors) if distractors else 0):
        text, stated = _distractor(world, entity, rng, alias_rate, namesakes)
        sentences.insert(rng.randint(0, len(sentences)), text)
        facts += stated
    return Article(id="", title=entity.name, text=" ".join([_capitalise(lead), *sentences]), subject=entity.id, facts=facts)


def gazette_article(world: World, rng: random.Random, alias_rate: float) -> Article:
    """A page of miscellany: true facts about unrelated entities, each named in full."""
    title = f"The {coin_word(rng, world.split, 2)} Gazette, issue {rng.randint(1, 400)}"
    sentences, facts = [], []
    for _ in range(rng.randint(4, 8)):
        kind = rng.choice(KINDS)
        other = world.entities[rng.choice(world.by_kind[kind])]
        name = rng.choice(fact_fields(other))
        sentences.append(fact_sentence(world, other, name, mention(other, rng, 0.0), rng, alias_rate))
        facts.append((other.id, name))
    return Article(id="", title=title, text=" ".join(sentences), subject=None, facts=facts)


def write_corpus(world: World, rng: random.Random, *, distractors: int, alias_rate: float, n_gazette: int) -> list[Article]:
    """All articles of a universe in a shuffled order, with ids a00000, a00001, ... in that order."""
    families: dict[str, list[str]] = {}
    for person in world.of("person"):
        families.setdefault(str(person.attrs["family"]), []).append(person.id)
    articles = [entity_article(world, e, rng, distractors, alias_rate, families) for e in world.entities.values()]
    articles += [gazette_article(world, rng, alias_rate) for _ in range(n_gazette)]
    rng.shuffle(articles)
    for index, article in enumerate(articles):
        article.id = f"a{index:05d}"
    return articles
