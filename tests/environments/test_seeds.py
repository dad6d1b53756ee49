"""One seed parser for forms, API and CLI: lists and ranges are counted against their maximum before they are built."""

from __future__ import annotations

import time

import pytest

from environments.seeds import SEED_MAX, SEED_MIN, SeedError, heldout_seeds_parse, seed_parse, seeds_check, seeds_parse


def test_it_reads_lists_ranges_and_negative_seeds():
    assert seeds_parse("0-4, 9") == [0, 1, 2, 3, 4, 9]
    assert seeds_parse("7 8") == [7, 8]
    assert seeds_parse("-5--3,-1") == [-5, -4, -3, -1]


def test_a_huge_range_is_refused_without_being_built():
    started = time.monotonic()
    with pytest.raises(SeedError, match="holds more than 1000 seeds"):
        seeds_parse("0-99999999999", maximum=1000)
    assert time.monotonic() - started < 1


def test_the_maximum_counts_every_part_together():
    assert len(seeds_parse("0-499, 500-999", maximum=1000)) == 1000
    with pytest.raises(SeedError, match="more than 1000"):
        seeds_parse("0-499, 500-999, 5000", maximum=1000)


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("9223372036854775808", "outside"),
        ("-9223372036854775809", "outside"),
        ("1" * 5000, "outside"),
        ("5-2", "runs backwards"),
        ("x", "'x' is not a seed"),
        ("1.5", "'1.5' is not a seed"),
        ("٣", "is not a seed"),
        ("", "at least one seed"),
        ("-", "is not a seed"),
    ],
)
def test_it_refuses_bad_seed_text_naming_it(raw: str, message: str):
    with pytest.raises(SeedError, match=message):
        seeds_parse(raw)


def test_the_int64_bounds_are_inclusive():
    assert seed_parse(str(SEED_MAX)) == SEED_MAX and seed_parse(str(SEED_MIN)) == SEED_MIN


def test_a_json_list_of_seeds_is_checked_for_type_range_and_length():
    assert seeds_check([0, 5], maximum=2) == [0, 5]
    with pytest.raises(SeedError, match="at most 2"):
        seeds_check([0, 1, 2], maximum=2)
    with pytest.raises(SeedError, match="outside"):
        seeds_check([2**70])
    with pytest.raises(SeedError, match="'1' is not a seed"):
        seeds_check(["1"])
    with pytest.raises(SeedError, match="True is not a seed"):
        seeds_check([True])
    with pytest.raises(SeedError, match="at least one"):
        seeds_check([])


def test_heldout_seeds_come_sorted_without_repeats_from_text_or_a_list():
    assert heldout_seeds_parse("1005, 1000-1002 1001") == [1000, 1001, 1002, 1005]
    assert heldout_seeds_parse([7, 3, 7]) == [3, 7]
    for bad in ("", "10-x", [], [True]):
        with pytest.raises(SeedError, match="^heldout seeds: "):
            heldout_seeds_parse(bad)
