"""Multi-hop questions over a universe, with the gold answer and the chain of supporting articles.

A chain question names an anchor entity, follows relations through `hops` entities and asks for an attribute
of the last one (or the entity one more relation away, whose name the last article states). Reading is
needed because each hop's link is stated only in the previous entity's article, often by alias. Options:

- constraint: the anchor is named only by surname and occupation ("the cartographer Vasq"), and several
  people share the surname, so the agent must check which namesake is meant;
- comparison: two chains of the same length end at entities of one kind; the question asks which of the two
  is earlier (or larger), and the answer is that entity's name.

`hops` counts the articles on one chain, so a 1-hop question needs one article, a comparison needs 2 x hops.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from environments.phantom.scoring import normalise_answer
from environments.phantom.world import ATTRIBUTES, Entity

REL_PHRASES: dict[tuple[str, str], tuple[str, ...]] = {
    ("person", "birthplace"): ("the birthplace of {x}", "the city where {x} was born", "the home town of {x}"),
    ("person", "employer"): ("the employer of {x}", "the organisation {x} worked for"),
    ("city", "country"): ("the country {x} lies in", "the country that contains {x}"),
    ("country", "capital"): ("the capital of {x}", "the capital city of {x}"),
    ("organisation", "headquarters"): ("the city where {x} is headquartered", "the home city of {x}"),
    ("organisation", "founder"): ("the founder of {x}", "the person who founded {x}"),
    ("work", "creator"): ("the creator of {x}", "the maker of {x}"),
    ("work", "publisher"): ("the publisher of {x}", "the organisation that published {x}"),
    ("work", "setting"): ("the setting of {x}", "the city where {x} is set"),
    ("event", "location"): ("the host city of {x}", "the city that hosted {x}"),
    ("event", "organiser"): ("the organiser of {x}", "the organisation that organised {x}"),
}
ATTR_QUESTIONS: dict[tuple[str, str], tuple[str, ...]] = {
    ("person", "birth_year"): ("In what year was {x} born?", "What is the birth year of {x}?"),
    ("person", "occupation"): ("What was the occupation of {x}?", "What did {x} do for a living?"),
    ("city", "founded"): ("In what year was {x} founded?", "When was {x} founded? Give the year."),
    ("city", "population"): ("What is the population of {x}?", "How many people live in {x}?"),
    ("country", "founded"): ("In what year did {x} become a state?", "When was {x} founded as a state? Give the year."),
    ("organisation", "founded"): ("In what year was {x} founded?", "When was {x} established? Give the year."),
    ("work", "year"): ("In what year did {x} appear?", "When was {x} completed? Give the year."),
    ("work", "form"): ("What kind of work is {x}?", "In what form is {x}?"),
    ("event", "year"): ("In what year did {x} take place?", "When was {x} held? Give the year."),
}
ENTITY_QUESTIONS: dict[bool, tuple[str, ...]] = {  # keyed by "is the answer a person?"
    True: ("Who is {x}?", "Name {x}.", "Who was {x}? Give the full name."),
    False: ("What is {x}?", "Name {x}.", "Give the name of {x}."),
}
# attribute -> (template, pick the smaller value?) ; the answer is the name of the entity that wins.
COMPARISONS: dict[tuple[str, str], tuple[tuple[str, bool], ...]] = {
    ("person", "birth_year"): (("Who was born first: {a} or {b}?", True), ("Who was born later: {a} or {b}?", False)),
    ("city", "founded"): (("Which city was founded earlier: {a} or {b}?", True),),
    ("city", "population"): (("Which city has more inhabitants: {a} or {b}?", False), ("Which city is smaller: {a} or {b}?", True)),
    ("country", "founded"): (("Which country became a state earlier: {a} or {b}?", True),),
    ("organisation", "founded"): (
        ("Which organisation is older: {a} or {b}?", True),
        ("Which was founded more recently: {a} or {b}?", False),
    ),
    ("work", "year"): (("Which work appeared first: {a} or {b}?", True),),
    ("event", "year"): (("Which event took place first: {a} or {b}?", True), ("Which event came later: {a} or {b}?", False)),
}
CONSTRAINED_ANCHORS: tuple[str, ...] = ("the {occupation} {family}", "the {occupation} surnamed {family}")


@dataclass(frozen=True)
class Hop:
    """One fact on the gold chain: `article_id` states that `entity`'s `field` is `value`."""

    entity: str
    field: str
    value: str  # an entity id for relations, the attribute value as text otherwise
    article_id: str


@dataclass(frozen=True)
class Question:
    text: str
    answer: str
    accepted: tuple[str, ...]  # every surface form scored as correct, the answer first
    answer_type: str  # year | number | text | person | city | country | organisation | work | event
    hops: int
    kind: str  # chain | comparison
    constrained: bool
    chain: tuple[Hop, ...]
    support: tuple[str, ...]  # article ids, in reading order, without repeats


class QuestionWriter:
    """Writes questions over one universe; `entities` and `article_of` are the universe's own tables."""

    def __init__(self, entities: dict[str, Entity], article_of: dict[str, str], constrainable: list[str]) -> None:
        self.entities = entities
        self.article_of = article_of
        self.ids = sorted(entities)
        self.constrainable = constrainable  # people whose surname is shared but surname + occupation is not

    def write(self, rng: random.Random, *, hops: int, comparison_rate: float = 0.0, constraint_rate: float = 0.0) -> Question:
        assert 1 <= hops <= 4, f"hops must be 1-4, got {hops}"
        for _ in range(200):
            question = (
                self._comparison(rng, hops, constraint_rate) if rng.random() < comparison_rate else self._chain(rng, hops, constraint_rate)
            )
            if question is not None and not _answer_in_question(question):
                return question
        raise RuntimeError(f"no {hops}-hop question found after 200 attempts; the universe is too small")

    def _anchor(self, rng: random.Random, constraint_rate: float) -> tuple[Entity, str, bool]:
        if self.constrainable and rng.random() < constraint_rate:
            person = self.entities[rng.choice(self.constrainable)]
            return person, rng.choice(CONSTRAINED_ANCHORS).format(**person.attrs), True
        entity = self.entities[rng.choice(self.ids)]
        return entity, (f"the {entity.name}" if entity.kind == "event" else entity.name), False

    def _walk(self, rng: random.Random, start: Entity, steps: int) -> list[tuple[Entity, str]] | None:
        """`steps` relation moves from `start` without revisiting: [(entity, relation taken from it), ...]."""
        path, seen, current = [], {start.id}, start
        for _ in range(steps):
            relation = rng.choice(sorted(current.rels))
            target = self.entities[current.rels[relation]]
            if target.id in seen:
                return None
            path.append((current, relation))
            seen.add(target.id)
            current = target
        return path

    def _describe(self, rng: random.Random, anchor_text: str, path: list[tuple[Entity, str]]) -> str:
        text = anchor_text
        for entity, relation in path:
            text = rng.choice(REL_PHRASES[(entity.kind, relation)]).format(x=text)
        return text

    def _hops(self, path: list[tuple[Entity, str]]) -> list[Hop]:
        return [Hop(e.id, rel, e.rels[rel], self.article_of[e.id]) for e, rel in path]

    def _chain(self, rng: random.Random, hops: int, constraint_rate: float) -> Question | None:
        anchor, anchor_text, constrained = self._anchor(rng, constraint_rate)
        path = self._walk(rng, anchor, hops)  # the last move is the final relation, if the question asks one
        if path is None:
            return None
        *links, (end, final_relation) = path
        described = self._describe(rng, anchor_text, links)
        chain = self._hops(links)
        accepted: tuple[str, ...]
        if rng.random() < 0.5:  # ask for an attribute of the last entity on the chain
            attribute = rng.choice(sorted(ATTRIBUTES[end.kind]))
            value = str(end.attrs[attribute])
            text = rng.choice(ATTR_QUESTIONS[(end.kind, attribute)]).format(x=described)
            chain.append(Hop(end.id, attribute, value, self.article_of[end.id]))
            answer_type, accepted = ATTRIBUTES[end.kind][attribute], (value,)
        else:  # ask for the entity one relation further, named in the last article
            target = self.entities[end.rels[final_relation]]
            np = rng.choice(REL_PHRASES[(end.kind, final_relation)]).format(x=described)
            text = rng.choice(ENTITY_QUESTIONS[target.kind == "person"]).format(x=np)
            chain.append(Hop(end.id, final_relation, target.id, self.article_of[end.id]))
            answer_type, accepted = target.kind, _accepted_names(target)
        return _question(text, accepted, answer_type, hops, "chain", constrained, chain)

    def _comparison(self, rng: random.Random, hops: int, constraint_rate: float) -> Question | None:
        first = self._side(rng, hops, constraint_rate, kind=None)
        if first is None:
            return None
        text_a, end_a, chain_a, constrained = first
        attribute = rng.choice(sorted(a for k, a in COMPARISONS if k == end_a.kind))
        for _ in range(50):
            second = self._side(rng, hops, 0.0, kind=end_a.kind)
            if second is None or second[1].id == end_a.id or second[1].attrs[attribute] == end_a.attrs[attribute]:
                continue
            text_b, end_b, chain_b, _ = second
            side_a = chain_a + [Hop(end_a.id, attribute, str(end_a.attrs[attribute]), self.article_of[end_a.id])]
            side_b = chain_b + [Hop(end_b.id, attribute, str(end_b.attrs[attribute]), self.article_of[end_b.id])]
            if {h.article_id for h in side_a} & {h.article_id for h in side_b}:
                continue  # the two sides must not share evidence, or the comparison is half a question
            template, smaller_wins = rng.choice(COMPARISONS[(end_a.kind, attribute)])
            a_first = rng.random() < 0.5
            text = template.format(a=text_a if a_first else text_b, b=text_b if a_first else text_a)
            a_smaller = int(end_a.attrs[attribute]) < int(end_b.attrs[attribute])
            winner = end_a if a_smaller == smaller_wins else end_b
            chain = side_a + side_b
            return _question(text, _accepted_names(winner), winner.kind, hops, "comparison", constrained, chain)
        return None

    def _side(self, rng: random.Random, hops: int, constraint_rate: float, kind: str | None) -> tuple[str, Entity, list[Hop], bool] | None:
        """One side of a comparison: a description of an entity reached in `hops - 1` moves, of `kind` if given."""
        for _ in range(40):
            anchor, anchor_text, constrained = self._anchor(rng, constraint_rate)
            path = self._walk(rng, anchor, hops - 1)
            if path is None:
                continue
            end = self.entities[path[-1][0].rels[path[-1][1]]] if path else anchor
            if (kind is None and any(k == end.kind for k, _ in COMPARISONS)) or end.kind == kind:
                return self._describe(rng, anchor_text, path), end, self._hops(path), constrained
        return None


def _accepted_names(entity: Entity) -> tuple[str, ...]:
    aliases = [] if entity.kind == "country" else entity.aliases  # a demonym names no country
    return (entity.name, *aliases)


def _question(
    text: str, accepted: tuple[str, ...], answer_type: str, hops: int, kind: str, constrained: bool, chain: list[Hop]
) -> Question:
    support = tuple(dict.fromkeys(h.article_id for h in chain))
    return Question(text[0].upper() + text[1:], accepted[0], accepted, answer_type, hops, kind, constrained, tuple(chain), support)


def _answer_in_question(question: Question) -> bool:
    """True when some accepted answer appears word for word in the question (e.g. the year in "1843 Fair").

    A one-hop comparison names its two candidates, so there the answer is meant to appear.
    """
    if question.kind == "comparison" and question.hops == 1:
        return False
    asked = f" {normalise_answer(question.text)} "
    return any(f" {normalise_answer(a)} " in asked for a in question.accepted)
