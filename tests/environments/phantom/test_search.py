"""BM25 search (search.py): candidate pruning keeps rank_bm25's ranking, and ids come back in a fixed order."""

from __future__ import annotations

import random

import numpy as np

from environments.phantom.search import SearchIndex, tokenize
from environments.phantom.universe import Universe, UniverseSpec

UNIVERSE = Universe(UniverseSpec("train", 4, 1500, 2, 0.5))


def test_pruned_search_is_full_rank_bm25_ranking_restricted_to_candidates() -> None:
    index = UNIVERSE.index
    top_agrees = 0
    for i in range(100):
        question = UNIVERSE.question(random.Random(i), hops=1 + i % 4, comparison_rate=0.2, constraint_rate=0.3)
        words = tokenize(question.text)
        full = index._bm25.get_scores(words)
        candidates = {d for w in words for d in index._postings.get(w, ())}
        ranked = [int(j) for j in np.argsort(-full, kind="stable")]
        found = index.search(question.text, 10)
        assert [p for p, _ in found] == [j for j in ranked if j in candidates][:10], question.text
        assert all(score == round(float(full[p]), 4) for p, score in found)
        top_agrees += found[0][0] == ranked[0]
    assert top_agrees >= 95  # documents matching only common words rarely reach the top


def test_a_title_finds_its_article_near_the_top() -> None:
    ranks = []
    for article in UNIVERSE.articles[:100]:
        top = [a.id for a, _ in UNIVERSE.search(article.title, 3)]
        assert article.id in top  # an event named after its city may outrank the city itself
        ranks.append(top.index(article.id))
    assert ranks.count(0) >= 90


def test_queries_of_common_words_only_still_rank_every_document() -> None:
    index = SearchIndex([f"harbour note {i}" for i in range(30)] + ["the city was founded", "a city", "founded in the city of salt"])
    assert [p for p, _ in index.search("note", 3)] == [0, 1, 2]  # "note" is in 30 of 33 documents: no candidates, full scoring
    assert [p for p, _ in index.search("salt city", 2)][0] == 32
    assert index.search("zzz", 3) == [] and index.search("", 3) == []


def test_tokenize_lowercases_and_splits_on_non_alphanumerics() -> None:
    assert tokenize("O. Vasq's 41,200 Residents!") == ["o", "vasq", "s", "41", "200", "residents"]
