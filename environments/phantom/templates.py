"""Sentence templates: several phrasings per fact, so a question's words rarely match the article's words.

Placeholders: {S} the article's subject (name, alias or a description such as "the cartographer"), {O} the
related entity (name or alias), {A} a country's demonym, {V} a value. The question side (questions.py) uses
other words again ("the employer of X" where an article says "X spent many years at Y").
"""

from __future__ import annotations

# (kind, field) -> phrasings of that one fact.
FACT_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("person", "birthplace"): (
        "{S} was born in {O}.",
        "{S}'s birthplace was {O}.",
        "{S} grew up in {O}, the city of their birth.",
        "{O} is remembered as the birthplace of {S}.",
        "{S} came into the world in {O}.",
    ),
    ("person", "employer"): (
        "{S} worked for {O}.",
        "For most of their career {S} was employed by {O}.",
        "{S} spent many years at {O}.",
        "{O} employed {S} for decades.",
        "{S} held a position at {O}.",
    ),
    ("person", "birth_year"): (
        "{S} was born in {V}.",
        "{S}'s year of birth was {V}.",
        "Parish records give {V} as the year {S} was born.",
    ),
    ("person", "occupation"): ("{S} worked as a {V}.", "By profession {S} was a {V}.", "{S} made a name as a {V}."),
    ("city", "country"): (
        "{S} lies in {O}.",
        "{S} lies in {A} territory.",
        "{S} belongs to {O}.",
        "Travellers reach {S} by crossing {O}.",
    ),
    ("city", "founded"): (
        "{S} was founded in {V}.",
        "The first settlement at {S} dates from {V}.",
        "{S} received its charter in {V}.",
        "Records show that {S} was established in {V}.",
    ),
    ("city", "population"): (
        "{S} has a population of {V}.",
        "About {V} people live in {S}.",
        "{S} is home to some {V} inhabitants.",
        "The last census counted {V} residents in {S}.",
    ),
    ("country", "founded"): (
        "{S} became independent in {V}.",
        "{S} was founded as a state in {V}.",
        "The {A} state dates from {V}.",
    ),
    ("country", "capital"): (
        "The capital of {S} is {O}.",
        "{O} serves as the capital of {S}.",
        "The seat of government of {S} is {O}.",
        "{S} is governed from {O}.",
    ),
    ("organisation", "founded"): (
        "{S} was founded in {V}.",
        "{S} opened its doors in {V}.",
        "Since {V}, {S} has been in operation.",
        "{S} was established in {V}.",
    ),
    ("organisation", "headquarters"): (
        "{S} is headquartered in {O}.",
        "The headquarters of {S} stand in {O}.",
        "{S} has its main seat in {O}.",
        "{S} is based in {O}.",
    ),
    ("organisation", "founder"): (
        "{S} was founded by {O}.",
        "{O} founded {S}.",
        "The founder of {S} was {O}.",
        "{S} owes its existence to {O}.",
    ),
    ("work", "creator"): (
        "{S} was created by {O}.",
        "{O} made {S}.",
        "{S} is the work of {O}.",
        "{O} is credited as the creator of {S}.",
    ),
    ("work", "year"): (
        "{S} was completed in {V}.",
        "{S} first appeared in {V}.",
        "{S} dates from {V}.",
        "{S} was first shown to the public in {V}.",
    ),
    ("work", "publisher"): (
        "{S} was published by {O}.",
        "{O} brought out {S}.",
        "The publisher of {S} was {O}.",
        "{S} appeared under the imprint of {O}.",
    ),
    ("work", "setting"): (
        "{S} is set in {O}.",
        "The action of {S} takes place in {O}.",
        "{O} provides the setting of {S}.",
        "{S} depicts {O}.",
    ),
    ("work", "form"): ("{S} is a {V}.", "In form, {S} is a {V}.", "Critics classify {S} as a {V}."),
    ("event", "year"): ("{S} took place in {V}.", "{S} was held in {V}.", "The date of {S} was {V}."),
    ("event", "location"): (
        "{S} was held in {O}.",
        "{O} hosted {S}.",
        "The venue of {S} was {O}.",
        "{S} took place in {O}.",
    ),
    ("event", "organiser"): (
        "{S} was organised by {O}.",
        "{O} organised {S}.",
        "The organiser of {S} was {O}.",
        "{O} arranged {S}.",
    ),
}

# Opening sentences; {N} is the canonical name. Person leads state birth year and occupation together.
LEADS: dict[str, tuple[str, ...]] = {
    "person": (
        "{N} (born {birth_year}) was a {occupation}.",
        "{N} was a {occupation}, born in {birth_year}.",
        "Born in {birth_year}, {N} worked as a {occupation}.",
        "The {occupation} {N} was born in the year {birth_year}.",
    ),
    "city": ("{N} is a city.", "{N} is a settlement of some size.", "The city of {N} is the subject of this article."),
    "country": ("{N} is a country.", "{N} is a sovereign state.", "The nation of {N} is described here."),
    "organisation": ("{N} is a {sector}.", "{N} is a well-known {sector}.", "Among institutions of its kind, {N} is a {sector}."),
    "work": ("{N} is a {form}.", "{N} is a celebrated {form}.", "Critics still discuss {N}, a {form}."),
    "event": ("The {N} was a {type}.", "The {N} is remembered as a notable {type}.", "Historians still write about the {N}."),
}

# Ways an article refers back to its own subject after the lead; {family}, {occupation} etc. come from attrs.
SUBJECT_REFERENCES: dict[str, tuple[str, ...]] = {
    "person": ("{family}", "the {occupation}"),
    "city": ("the city",),
    "country": ("the country",),
    "organisation": ("the {sector}",),
    "work": ("the {form}", "the work"),
    "event": ("the event", "the {type}"),
}

DISTRACTOR_OPENERS: tuple[str, ...] = ("", "By comparison, ", "Elsewhere, ", "For context, ")
# Template openings that may be lower-cased after a distractor opener; anything else is a proper name.
COMMON_OPENINGS: frozenset[str] = frozenset(
    {"The", "About", "Records", "For", "Born", "Since", "In", "Parish", "Critics", "By", "Travellers"}
)
NAMESAKE_TEMPLATES: tuple[str, ...] = (
    "Not to be confused with {P}, a {occupation} born in {year}.",
    "{S} is unrelated to the {occupation} {P}, born in {year}.",
)
