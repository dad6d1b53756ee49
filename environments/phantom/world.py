"""The entities of a phantom universe: people, places (cities, countries), organisations, works and events.

Each entity has typed attributes and single-valued relations to other entities, so a chain of relations always
leads to exactly one entity and a multi-hop question has exactly one answer. Dates are kept consistent (a work
comes after its creator's birth, an organisation after its founder's) so a reader is never faced with nonsense.
"""

from __future__ import annotations

import bisect
import random
from dataclasses import dataclass, field

from environments.phantom.names import ADJECTIVES, CITY_SUFFIXES, COUNTRY_SUFFIXES, NOUNS, NameBook, coin_word

KINDS: tuple[str, ...] = ("person", "city", "country", "organisation", "work", "event")

# (subject kind, relation) -> object kind. Every kind has at least one outgoing relation, so walks never stall.
RELATIONS: dict[tuple[str, str], str] = {
    ("person", "birthplace"): "city",
    ("person", "employer"): "organisation",
    ("city", "country"): "country",
    ("country", "capital"): "city",
    ("organisation", "headquarters"): "city",
    ("organisation", "founder"): "person",
    ("work", "creator"): "person",
    ("work", "publisher"): "organisation",
    ("work", "setting"): "city",
    ("event", "location"): "city",
    ("event", "organiser"): "organisation",
}

# Attributes a question may ask for, with the answer's type. Years and populations also serve comparisons.
ATTRIBUTES: dict[str, dict[str, str]] = {
    "person": {"birth_year": "year", "occupation": "text"},
    "city": {"founded": "year", "population": "number"},
    "country": {"founded": "year"},
    "organisation": {"founded": "year"},
    "work": {"year": "year", "form": "text"},
    "event": {"year": "year"},
}

# Occupation -> the forms of work such a person makes.
OCCUPATIONS: dict[str, tuple[str, ...]] = {
    "painter": ("painting", "mural"),
    "sculptor": ("statue", "relief"),
    "poet": ("poem cycle", "verse drama"),
    "novelist": ("novel", "novella"),
    "composer": ("symphony", "opera"),
    "cartographer": ("atlas", "sea chart"),
    "astronomer": ("star catalogue", "treatise"),
    "architect": ("cathedral design", "treatise"),
    "playwright": ("play", "comedy"),
    "historian": ("chronicle", "history"),
    "botanist": ("herbarium", "field guide"),
    "photographer": ("photo series", "album"),
}
ORG_TYPES: tuple[tuple[str, str], ...] = (
    ("University", "university"),
    ("Observatory", "observatory"),
    ("Foundry", "foundry"),
    ("Press", "publishing house"),
    ("Shipping Company", "shipping company"),
    ("Conservatory", "conservatory"),
    ("Guild", "guild"),
    ("Bank", "bank"),
    ("Museum", "museum"),
    ("Institute", "research institute"),
    ("Theatre", "theatre"),
)
EVENT_TYPES: tuple[str, ...] = ("Fair", "Accord", "Congress", "Expedition", "Exhibition", "Festival")


@dataclass
class Entity:
    id: str  # "<kind>:<n>", e.g. "person:17"
    kind: str
    name: str  # canonical name, the article's title
    aliases: list[str] = field(default_factory=list)  # unambiguous other mentions used in articles
    attrs: dict[str, int | str] = field(default_factory=dict)
    rels: dict[str, str] = field(default_factory=dict)  # relation -> entity id


@dataclass
class World:
    split: str
    entities: dict[str, Entity]
    by_kind: dict[str, list[str]]

    def of(self, kind: str) -> list[Entity]:
        return [self.entities[i] for i in self.by_kind[kind]]


def entity_counts(n_entities: int) -> dict[str, int]:
    """How many entities of each kind a universe with `n_entities` entity articles holds."""
    counts = {
        "country": max(3, n_entities // 150),
        "city": max(8, n_entities // 10),
        "organisation": max(6, n_entities * 15 // 100),
        "work": max(6, n_entities * 22 // 100),
        "event": max(4, n_entities // 10),
    }
    counts["person"] = max(12, n_entities - sum(counts.values()))
    return counts


def generate_world(rng: random.Random, split: str, n_entities: int) -> World:
    """Entities for one universe, in a fixed order of draws from `rng` so a seed always gives the same world."""
    counts = entity_counts(n_entities)
    book = NameBook(rng, split)
    entities: dict[str, Entity] = {}
    by_kind: dict[str, list[str]] = {kind: [] for kind in KINDS}

    def add(entity: Entity) -> Entity:
        entities[entity.id] = entity
        by_kind[entity.kind].append(entity.id)
        return entity

    for i in range(counts["country"]):
        root = coin_word(rng, split, 2)
        name, demonym = book.unique(lambda root=root: (root + rng.choice(COUNTRY_SUFFIXES), root + "ian"))
        add(Entity(f"country:{i}", "country", name, [demonym], {"founded": rng.randint(1400, 1900)}))
    countries = by_kind["country"]

    for i in range(counts["city"]):

        def make_city() -> tuple[str, ...]:
            root = coin_word(rng, split, rng.choice((1, 2, 2)))
            suffix = rng.choice(CITY_SUFFIXES)
            return (root + suffix, root) if suffix else (root,)

        names = book.unique(make_city)
        population = max(800, round(rng.lognormvariate(10.5, 1.2), -2))
        population = int(float(f"{population:.3g}"))  # three significant figures, as a gazetteer rounds
        city = add(Entity(f"city:{i}", "city", names[0], list(names[1:]), {"founded": rng.randint(800, 1850), "population": population}))
        # The first cities go one to each country so every country holds at least one (its capital).
        city.rels["country"] = countries[i] if i < len(countries) else rng.choice(countries)
    for country_id in countries:
        members = [c for c in by_kind["city"] if entities[c].rels["country"] == country_id]
        entities[country_id].rels["capital"] = rng.choice(members)
    cities = by_kind["city"]

    families = [coin_word(rng, split, rng.choice((1, 2))) for _ in range(max(4, counts["person"] // 3))]
    for i in range(counts["person"]):

        def make_person() -> tuple[str, ...]:
            given, family = coin_word(rng, split, 2), rng.choice(families)
            return (f"{given} {family}", f"{given[0]}. {family}")

        full, short = book.unique(make_person)
        occupation = rng.choice(sorted(OCCUPATIONS))
        person = add(Entity(f"person:{i}", "person", full, [short], {"birth_year": rng.randint(1720, 1960), "occupation": occupation}))
        person.attrs["family"] = full.split(" ", 1)[1]
        person.rels["birthplace"] = rng.choice(cities)
    people = by_kind["person"]

    for i in range(counts["organisation"]):
        title, sector = rng.choice(ORG_TYPES)

        def make_org(title: str = title) -> tuple[str, ...]:
            word = coin_word(rng, split, 2)
            return (f"{word} {title}", word)

        full, short = book.unique(make_org)
        founder = entities[rng.choice(people)]
        founded = min(2015, int(founder.attrs["birth_year"]) + rng.randint(25, 55))
        org = add(Entity(f"organisation:{i}", "organisation", full, [short], {"founded": founded, "sector": sector}))
        org.rels.update(founder=founder.id, headquarters=rng.choice(cities))
    orgs_by_founding = sorted(by_kind["organisation"], key=lambda o: (entities[o].attrs["founded"], o))
    founding_years = [int(entities[o].attrs["founded"]) for o in orgs_by_founding]

    def org_existing_by(year: int) -> str:
        eligible = bisect.bisect_right(founding_years, year)
        return rng.choice(orgs_by_founding[: max(1, eligible)])

    for person_id in people:
        entities[person_id].rels["employer"] = org_existing_by(int(entities[person_id].attrs["birth_year"]) + 50)

    for i in range(counts["work"]):
        creator = entities[rng.choice(people)]
        form = rng.choice(OCCUPATIONS[str(creator.attrs["occupation"])])

        def make_title() -> tuple[str, ...]:
            if rng.random() < 0.6:
                return (f"The {rng.choice(ADJECTIVES)} {rng.choice(NOUNS)}",)
            return (f"{rng.choice(NOUNS)} of {coin_word(rng, split, 2)}",)

        (title,) = book.unique(make_title)
        year = int(creator.attrs["birth_year"]) + rng.randint(20, 65)
        work = add(Entity(f"work:{i}", "work", title, [], {"year": year, "form": form}))
        work.rels.update(creator=creator.id, publisher=org_existing_by(year), setting=rng.choice(cities))

    for i in range(counts["event"]):
        kind = rng.choice(EVENT_TYPES)
        year = rng.randint(1750, 2010)
        location = rng.choice(cities)
        city_name = entities[location].name

        def make_event(kind: str = kind, year: int = year, city_name: str = city_name) -> tuple[str, ...]:
            if kind in ("Fair", "Exhibition", "Festival") and rng.random() < 0.5:
                return (f"{year} {city_name} {kind}",)
            return (f"{coin_word(rng, split, 2)} {kind}",)

        (name,) = book.unique(make_event)
        event = add(Entity(f"event:{i}", "event", name, [], {"year": year, "type": kind.lower()}))
        event.rels.update(location=location, organiser=org_existing_by(year))

    return World(split=split, entities=entities, by_kind=by_kind)
