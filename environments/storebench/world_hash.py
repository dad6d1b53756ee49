"""How a StoreBench world is hashed: its state hash, part by part, each part's digest cached until a tool touches it.

World.state_hash combines the scalars with one digest per part (HASH_PARTS, or HASH_PARTS_V2 for the 2.0.0 engine);
this module computes those digests, and keeps the agenda's and the order book's as multiset sums so that one change
costs O(1). Golden episodes pin every byte here: a change to what a digest covers is a new engine version.
"""

from __future__ import annotations

import hashlib
import heapq
import marshal
from collections.abc import Callable, Iterable
from functools import partial
from itertools import repeat
from operator import attrgetter, methodcaller
from typing import TYPE_CHECKING, Any

from environments.storebench.entities import (
    V2_FIELDS,
    Discount,
    Ledger,
    Order,
    Payable,
    PurchaseOrder,
    Shock,
    Sku,
    Supplier,
    Ticket,
    row_getter,
)

if TYPE_CHECKING:
    from environments.storebench.world import World

_CLASSES = (Sku, Supplier, PurchaseOrder, Order, Ticket, Discount, Payable, Shock, Ledger)
ROWS: dict[type, attrgetter[Any]] = {cls: row_getter(cls, V2_FIELDS) for cls in _CLASSES}  # 1.0.0 rows: exactly the fields it had
# 2.0.0 hashes the SKUs' daily sales histories (up to 120 ints each) as their own part: they change only at
# midnight, while the rest of a SKU row (reserved stock) changes in most slots.
ROWS_V2: dict[type, attrgetter[Any]] = {cls: row_getter(cls, ("sold",) if cls is Sku else ()) for cls in _CLASSES}
HASH_PARTS = ("skus", "suppliers", "pos", "orders", "tickets", "discounts", "payables", "misc", "rng")
HASH_PARTS_V2 = (*HASH_PARTS, "clock", "sales")


def _rows(world: World, cls: type, items: Any) -> list[Any]:
    """Each item's row (all of class `cls`), through the engine's C getter: no Python loop per row."""
    return list(map(world._rows[cls], items))


def part_digest(world: World, part: str) -> bytes:
    if part == "orders":
        return _orders_digest(world)
    if part == "skus":
        return _listed_digest(world, part, world.skus, world._rows[Sku])
    if part == "pos":
        getter = world._rows[PurchaseOrder]
        return _listed_digest(world, part, world.pos, lambda po: ((row := getter(po))[:-1], sorted(row[-1].items())))
    if part == "tickets":
        return _listed_digest(world, part, world.tickets, world._rows[Ticket])
    if part == "rng":
        return _rng_digest(world)
    if part == "misc":
        return _misc_digest(world)
    return hashlib.sha256(marshal.dumps(_part_rows(world, part), 2)).digest()


def _listed_digest(world: World, part: str, items: dict[Any, Any], row: Callable[[Any], Any]) -> bytes:
    """The digest of one marshal of the list of every item's row, from one cached marshal per row.

    Version 2 marshal writes no back-references, so a list is b"[", its length, then its items one after another:
    a slot that reserves stock for three SKUs re-marshals three rows, not 68 (touch_pieces names them)."""
    blobs: dict[Any, bytes] = world._pieces[part]
    for key in items.keys() - blobs.keys():
        blobs[key] = marshal.dumps(row(items[key]), 2)
    h = hashlib.sha256(b"[" + len(items).to_bytes(4, "little"))
    h.update(b"".join(map(blobs.__getitem__, items)))
    return h.digest()


def _misc_digest(world: World) -> bytes:
    """One marshalled tuple: the ledger, counters and budgets (the head, which most calls and every slot change), then
    the shocks, the news (its length and last five), the quotes and the last three daily logs, whose marshal is kept
    until misc is touched (what changes them does); the bytes are the tuple's, element after element."""
    pieces = world._pieces["misc"]
    if not pieces:
        pieces["shocks"] = marshal.dumps(_rows(world, Shock, world.shocks), 2)
        said = (repr(world.news[-5:]), repr(world.quotes), repr(world.marketing_log[-3:]), repr(world.daily_log[-3:]))
        pieces["said"] = marshal.dumps(said, 2)[5:]  # the four strings, less their tuple's header
    head = marshal.dumps((ROWS[Ledger](world.ledger), sorted(world.counters.items()), sorted(world.budgets.items())), 2)
    h = hashlib.sha256(b"(" + MISC_FIELDS.to_bytes(4, "little") + head[5:])
    h.update(pieces["shocks"])
    h.update(marshal.dumps(len(world.news), 2))
    h.update(pieces["said"])
    h.update(marshal.dumps(len(world.daily_log), 2))
    return h.digest()


MISC_FIELDS = 10


def no_pieces() -> dict[str, dict[str, Any]]:
    return {"skus": {}, "pos": {}, "tickets": {}, "rng": {}, "misc": {}}


def _rng_digest(world: World) -> bytes:
    # Python's hash of int tuples is not randomised per process (only str/bytes are), and is far cheaper
    # than serialising 7 x 625 words on every purchase; replays run on the same interpreter version.
    # (Only int tuples: hash(None) is address-based before Python 3.12, so gauss_next goes through repr.)
    # A stream's state is read and hashed again only when it was touched: most calls draw from one stream, or none.
    # The streams in the order World made them (world.STREAMS, which this module cannot import: world imports it).
    streams: dict[str, tuple[int, Any]] = world._pieces["rng"]
    names = tuple(world.rng)
    for name in names:
        if name not in streams:
            state = world.rng[name].getstate()
            streams[name] = (hash(state[1]), state[2])
    words = tuple_hash([streams[name][0] for name in names]).to_bytes(8, "big", signed=True)
    return words + repr([streams[name][1] for name in names]).encode()


_XXPRIME_1, _XXPRIME_2, _XXPRIME_5 = 11400714785074694791, 14029467366897019727, 2870177450012600261
_U64 = (1 << 64) - 1


def tuple_hash(item_hashes: list[int]) -> int:
    """hash(tuple(items)) from the items' own hashes: CPython's 64-bit tuple hash (xxHash-based, Objects/tupleobject.c),
    so a tuple of seven RNG states whose one changed is not hashed over all seven again. Checked at import."""
    acc = _XXPRIME_5
    for lane in item_hashes:
        acc = (acc + (lane & _U64) * _XXPRIME_2) & _U64
        acc = ((acc << 31) | (acc >> 33)) & _U64
        acc = (acc * _XXPRIME_1) & _U64
    acc = (acc + (len(item_hashes) ^ (_XXPRIME_5 ^ 3527539))) & _U64
    if acc == _U64:
        return 1546275796
    return acc - (1 << 64) if acc >> 63 else acc


_SAMPLE = ((1, 2, 3), (-1, 1 << 70), (), tuple(range(625)))
assert tuple_hash([hash(t) for t in _SAMPLE]) == hash(_SAMPLE), "this interpreter's tuple hash is not CPython's 64-bit one"


DIGEST_MOD = 1 << 128
_BLAKE16 = partial(hashlib.blake2b, digest_size=16)
_DIGEST = methodcaller("digest")
_FROM_BIG = partial(int.from_bytes, byteorder="big")


def multiset_digests(rows: Iterable[Any]) -> list[int]:
    """Each row's 128-bit digest (blake2b over its version 2 marshal), in C iterators: no Python frame per row."""
    return list(map(_FROM_BIG, map(_DIGEST, map(_BLAKE16, map(marshal.dumps, rows, repeat(2))))))


def entry_digest(entry: tuple[Any, ...]) -> int:
    return multiset_digests((entry,))[0]


def agenda_push(world: World, entry: tuple[Any, ...]) -> None:
    """Schedules an agenda entry (minute, seq, kind, ref); its digest joins the agenda's at the next hash."""
    heapq.heappush(world.agenda, entry)
    if world._agenda_sum is not None:
        world._agenda_new[entry[1]] = entry


def agenda_pop(world: World) -> tuple[Any, ...]:
    """Takes the earliest agenda entry off, and its digest out of the agenda's (never digested if it came and went
    between two hashes)."""
    entry = heapq.heappop(world.agenda)
    if world._agenda_sum is not None:
        digest = world._entry_digests.pop(entry[1], None)
        if digest is not None:
            world._agenda_sum = (world._agenda_sum - digest) % DIGEST_MOD
        elif world._agenda_new.pop(entry[1], None) is None:  # counted before per-entry digests were kept
            world._agenda_sum = (world._agenda_sum - entry_digest(entry)) % DIGEST_MOD
    return entry


def agenda_digest(world: World) -> int:
    """The agenda as a multiset sum of entry digests: O(1) per push or pop (agenda_push, agenda_pop keep `_agenda_sum`)."""
    if world._agenda_sum is None:
        world._entry_digests = dict(zip((entry[1] for entry in world.agenda), multiset_digests(world.agenda), strict=True))
        world._agenda_sum = sum(world._entry_digests.values()) % DIGEST_MOD
        world._agenda_new.clear()
    elif world._agenda_new:
        digests = multiset_digests(world._agenda_new.values())
        world._entry_digests.update(zip(world._agenda_new, digests, strict=True))
        world._agenda_sum = (world._agenda_sum + sum(digests)) % DIGEST_MOD
        world._agenda_new.clear()
    return world._agenda_sum


def _orders_digest(world: World) -> bytes:
    cache = world._order_digests
    orders = world.orders
    getter = world._rows[Order]
    if world._orders_dirty is None:
        cache.clear()
        cache.update(zip(orders, multiset_digests(map(getter, orders.values())), strict=True))
        world._order_sum = sum(cache.values()) % DIGEST_MOD
    else:
        total = world._order_sum
        for oid in world._orders_dirty:
            old = cache.pop(oid, None)
            if old is not None:
                total -= old
        live = [oid for oid in world._orders_dirty if oid in orders]
        digests = multiset_digests(map(getter, map(orders.__getitem__, live)))
        cache.update(zip(live, digests, strict=True))
        world._order_sum = (total + sum(digests)) % DIGEST_MOD
    world._orders_dirty = set()
    return hashlib.sha256(f"{world._order_sum}:{len(world.orders)}:{world.archive_digest}:{world.archived_orders}".encode()).digest()


def _part_rows(world: World, part: str) -> Any:
    if part == "suppliers":
        return _rows(world, Supplier, world.suppliers.values())
    if part == "discounts":
        return _rows(world, Discount, world.discounts.values())
    if part == "payables":
        return _rows(world, Payable, world.payables)
    if part == "sales":  # 2.0.0 only: touched at midnight and when a product is added
        return [(s.id, s.sold) for s in world.skus.values()]
    if part == "clock":  # 2.0.0 only
        return (
            world.next_slot,
            world.agenda_seq,
            agenda_digest(world),
            len(world.agenda),
            sorted(world.sold_today.items()),
            sorted(world.spend_today.items()),
            world.settled_today,
            sorted(world.day_tally.items()),
        )
    raise AssertionError(f"unknown hash part {part}")
