"""Reading skills for the multisearch anchor: parse a question into a plan, read facts out of an article.

Both read only public text: the question, search results and opened articles. They know the phrasings the
environment writes with (questions.py and templates.py), as a reader who has seen many such questions would,
and never the gold answer, the chain or the supporting article ids.

- `parse_question(text)` inverts the question grammar: a chain question becomes (anchor, relations from the
  anchor outward, what is asked at the end); a comparison becomes two such descriptions, the attribute and
  which value wins. None when the text fits no known phrasing.
- `read_relation(article, kind, relation)` finds the sentence that states the subject's `relation` and returns
  how it names the related entity; `read_attribute` does the same for a value. Sentences about other entities
  (distractors: namesakes, gazette-style facts) are skipped by checking that the sentence's subject refers to
  the article's own subject (its title, an alias derived from it, its surname, or "the <description>").
- `title_fits(title, mention, kind)`: can an article with this title be the entity the mention names?
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from environments.phantom.names import CITY_SUFFIXES, COUNTRY_SUFFIXES
from environments.phantom.questions import ATTR_QUESTIONS, COMPARISONS, CONSTRAINED_ANCHORS, ENTITY_QUESTIONS, REL_PHRASES
from environments.phantom.templates import FACT_TEMPLATES, LEADS
from environments.phantom.world import ATTRIBUTES, OCCUPATIONS, ORG_TYPES, RELATIONS

_OPENER = r"(?:(?:By comparison|Elsewhere|For context), )?"
_INITIAL = re.compile(r"(?<![A-Za-z])([A-Z])\. ")  # "O. Vasq": not a sentence end


@dataclass(frozen=True)
class Anchor:
    text: str  # the entity's name as the question gives it, or the surname of a constrained person
    occupation: str = ""  # set when the person is named only by occupation and surname


@dataclass(frozen=True)
class Description:
    """An entity reached from `anchor` by `relations` ((kind, relation) pairs, anchor first)."""

    anchor: Anchor
    relations: tuple[tuple[str, str], ...]

    def kinds(self) -> tuple[str, ...]:
        """The possible kinds of the described (last) entity: known when a relation leads to it."""
        if self.relations:
            return (RELATIONS[self.relations[-1]],)
        return ("person",) if self.anchor.occupation else tuple(ATTRIBUTES)


@dataclass(frozen=True)
class Plan:
    ask: str  # attribute | entity | comparison
    sides: tuple[Description, ...]  # one, or two for a comparison
    attribute: tuple[tuple[str, str], ...] = ()  # (kind, attribute) pairs the question may mean (attribute, comparison)
    final: tuple[str, str] | None = None  # entity questions: the (kind, relation) whose object is the answer
    smaller_wins: bool = True  # comparisons


def _pattern(template: str, slots: dict[str, str]) -> re.Pattern[str]:
    """A template with {slot} holes as a regex; `slots` maps each hole to its group pattern."""
    parts = re.split(r"(\{[A-Za-z_]+\})", template)
    out = "".join(slots[p[1:-1]] if p.startswith("{") and p[1:-1] in slots else re.escape(p) for p in parts)
    return re.compile(out.replace(r"a\ ", r"an?\ "), re.IGNORECASE)  # "a {V}" reads "an astronomer" too


@cache
def _rel_patterns() -> list[tuple[tuple[str, str], re.Pattern[str]]]:
    return [(key, _pattern(p, {"x": "(?P<x>.+)"})) for key, phrases in REL_PHRASES.items() for p in phrases]


def parse_description(text: str) -> Description | None:
    """Peel relation phrases off `text` until an anchor is left ("the employer of Orsa Vasq" -> Orsa Vasq, employer)."""
    for key, pattern in _rel_patterns():
        match = pattern.fullmatch(text)
        if match:
            inner = parse_description(match["x"])
            if inner is not None and key[0] in inner.kinds():
                return Description(inner.anchor, (*inner.relations, key))
    return _parse_anchor(text)


def _parse_anchor(text: str) -> Description | None:
    occupations = "|".join(OCCUPATIONS)
    for template in CONSTRAINED_ANCHORS:
        match = _pattern(template, {"occupation": f"(?P<o>{occupations})", "family": r"(?P<f>[A-Z][a-z]+)"}).fullmatch(text)
        if match:
            return Description(Anchor(match["f"], match["o"].lower()), ())
    if not text or not text[0].isupper() and not text.startswith("the "):
        return None
    return Description(Anchor(text[4:] if text.startswith("the ") else text), ())


def parse_question(text: str) -> Plan | None:
    """The plan for a question (module docstring), or None when no phrasing fits."""
    for (kind, attribute), templates in COMPARISONS.items():
        for template, smaller in templates:
            head, tail = template.split("{a}")[0], template.split("{b}")[1]
            if not (text.lower().startswith(head.lower()) and text.endswith(tail)):
                continue
            middle = text[len(head) : len(text) - len(tail)]
            for cut in [m.start() for m in re.finditer(" or ", middle)]:  # " or " may sit inside a side too
                a, b = parse_description(middle[:cut]), parse_description(middle[cut + 4 :])
                if a is not None and b is not None:
                    return Plan("comparison", (a, b), ((kind, attribute),), smaller_wins=smaller)
    for (kind, _), template in [(key, t) for key, ts in ATTR_QUESTIONS.items() for t in ts]:
        match = _pattern(template, {"x": "(?P<x>.+)"}).fullmatch(text)
        side = parse_description(match["x"]) if match else None
        if side is not None and kind in side.kinds():
            # "In what year was {x} founded?" asks a city or an organisation: keep every kind the side allows
            keys = tuple(key for key, ts in ATTR_QUESTIONS.items() if template in ts and key[0] in side.kinds())
            return Plan("attribute", (side,), keys)
    for phrasings in ENTITY_QUESTIONS.values():
        for phrasing in phrasings:
            match = _pattern(phrasing, {"x": "(?P<x>.+)"}).fullmatch(text)
            if match:
                side = parse_description(match["x"])
                if side is not None and side.relations:
                    return Plan("entity", (Description(side.anchor, side.relations[:-1]),), final=side.relations[-1])
    return None


# --- reading articles ---------------------------------------------------------------------------------------


def sentences(text: str) -> list[str]:
    protected = _INITIAL.sub(lambda m: f"{m[1]}\x00 ", text)
    return [s.replace("\x00", ".") for s in re.split(r"(?<=\.) (?=[A-Z])", protected)]


def refers_to_subject(mention: str, title: str, kind: str) -> bool:
    """Whether a sentence's subject `mention` is the article's own subject (module docstring)."""
    words = mention.split(" ")
    if mention == title or (kind == "event" and mention.lower() == f"the {title.lower()}"):
        return True
    if len(words) >= 2 and words[0].lower() == "the" and words[1][:1].islower():  # "the cartographer", "the city"
        return True
    if kind == "person":
        family = title.split(" ")[-1]
        return mention == family or mention == f"{title[0]}. {family}"
    if kind == "organisation":
        return title_fits(title, mention, "organisation")
    if kind == "city":
        return any(title == mention + suffix for suffix in CITY_SUFFIXES if suffix)
    return False


@cache
def _fact_patterns(kind: str, field: str) -> list[re.Pattern[str]]:
    slots = {"S": "(?P<S>.+?)", "O": "(?P<O>.+?)", "A": "(?P<A>[A-Z][a-z]+ian)", "V": "(?P<V>.+?)"}
    return [re.compile(_OPENER + _pattern(t, slots).pattern, re.IGNORECASE) for t in FACT_TEMPLATES.get((kind, field), ())]


@cache
def _lead_patterns(kind: str) -> list[re.Pattern[str]]:
    slots = {
        "N": "(?P<N>.+?)",
        "birth_year": r"(?P<birth_year>\d+)",
        "occupation": "(?P<occupation>[a-z]+)",
        "form": "(?P<form>[a-z ]+?)",
        "sector": "(?P<sector>[a-z ]+?)",
        "type": "(?P<type>[a-z]+)",
    }
    # the most literal phrasing first: "{N} is a celebrated {form}" before "{N} is a {form}"
    return [_pattern(t, slots) for t in sorted(LEADS.get(kind, ()), key=lambda t: -len(re.sub(r"\{\w+\}", "", t)))]


def _subject_sentences(text: str, title: str, kind: str, field: str) -> list[re.Match[str]]:
    found = []
    for sentence in sentences(text):
        for pattern in _fact_patterns(kind, field):
            match = pattern.fullmatch(sentence)
            groups = match.groupdict() if match else {}
            if "S" in groups:
                subject = refers_to_subject(groups["S"], title, kind)
            else:  # "The Keistaerian state dates from 1813": the demonym names the subject
                subject = bool(match) and title_fits(title, groups.get("A") or "", "country")
            if match and subject:
                found.append(match)  # every phrasing that fits: "lies in {O}" and "lies in {A} territory" both do
    return found


def is_name(text: str) -> bool:
    """A proper name: capitalised words, "of" allowed inside ("Harbour of Velmora"), "O. Vasq" too."""
    words = text.split(" ")
    return bool(text) and words[0][:1].isupper() and all(w[:1].isupper() or w == "of" for w in words)


def read_relation(text: str, title: str, kind: str, relation: str) -> str | None:
    """How the article about `title` names the entity its `relation` points at: a name, an alias or a demonym."""
    for match in _subject_sentences(text, title, kind, relation):
        groups = match.groupdict()
        mention = groups.get("O") or groups.get("A") or ""
        if mention.lower().startswith("the ") and RELATIONS[(kind, relation)] == "event":
            mention = mention[4:]
        if is_name(mention):  # "Vasq was born in the year 1801" matches the birthplace phrasing too
            return mention
    return None


def _value_fits(value: str, kind: str, attribute: str) -> bool:
    if ATTRIBUTES[kind][attribute] in ("year", "number"):
        return value.replace(",", "").isdigit()
    return value[:1].islower()


def read_attribute(text: str, title: str, kind: str, attribute: str) -> str | None:
    """The value the article about `title` states for `attribute` (the lead sentence first, where it states it)."""
    for pattern in _lead_patterns(kind):
        match = pattern.fullmatch(sentences(text)[0])
        if match and attribute in match.groupdict() and match["N"] == title:
            return match[attribute]
    for match in _subject_sentences(text, title, kind, attribute):
        if _value_fits(match["V"], kind, attribute):
            return match["V"]
    return None


def lead_occupation(snippet: str) -> str | None:
    """The occupation a person article's lead (its first sentence, which search snippets show) states."""
    for pattern in _lead_patterns("person"):
        match = pattern.fullmatch(snippet)
        if match:
            return match["occupation"]
    return None


def title_fits(title: str, mention: str, kind: str | None) -> bool:
    """Whether an article titled `title` can be the entity named `mention` (its name or one of its aliases)."""
    if title == mention:
        return True
    if kind in (None, "person"):
        initial = re.fullmatch(r"([A-Z])\. (\S+)", mention)
        if initial and title.startswith(initial[1]) and title.endswith(f" {initial[2]}") and title.count(" ") == 1:
            return True
    if kind in (None, "organisation") and any(title == f"{mention} {name}" for name, _ in ORG_TYPES):
        return True  # "Feidaen" is Feidaen Institute, not the person Feidaen Lubil
    if kind in (None, "city") and any(title == mention + s for s in CITY_SUFFIXES if s):
        return True
    if kind in (None, "country") and mention.endswith("ian"):
        return any(title == mention[:-3] + s for s in COUNTRY_SUFFIXES)
    return False


def expansions(mention: str, kind: str | None) -> list[str]:
    """Canonical names an alias may stand for (a city's root + a suffix, a demonym's root + a country suffix)."""
    if kind == "city" and " " not in mention:
        return [mention + s for s in CITY_SUFFIXES if s]
    if kind == "country" and mention.endswith("ian"):
        return [mention[:-3] + s for s in COUNTRY_SUFFIXES]
    return []
