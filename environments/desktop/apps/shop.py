"""The shop: a search box, a result list (recommended order, or by price after "Sort by price"), the
selected product's details and a Buy button; every purchase is final.

Intents: ("search",), ("sort",), ("pick", product id), ("buy",).
"""

from __future__ import annotations

import random

import environments.desktop.ops as ops
from environments.desktop.layout import Intent, Screen, ad_overlay, frame, split, visible_rows
from environments.desktop.state import AppData, Product, Ui


def results(data: AppData, ui: Ui, *, recommended: bool, seed: int) -> list[Product]:
    """What the list shows: the last search's hits, by price when sorted, else in catalogue (or, personalised,
    a per-user "recommended") order."""
    found = ops.shop_search(data, ui.view.get("shop.searched", ""))
    if ui.view.get("shop.sort") == "price":
        return sorted(found, key=lambda p: (p.price_cents, p.id))
    if recommended:
        random.Random(f"desktop-recommend-{seed}").shuffle(found)
    return found


def view(s: Screen, data: AppData) -> None:
    ui = s.ui
    window, toolbar, content = frame(s, "shop", f"{len(data.orders)} orders")
    x, y = toolbar.bounds[:2]
    s.textbox(toolbar, "shop.query", "Search products", (x + 8, y + 4, 360, 28))
    s.buttons(toolbar, [("shop.search", "Search", ("search",)), ("shop.sort", "Sort by price", ("sort",))], (x + 380, y + 4), 150)
    side, main = split(s, "shop", content, 420)
    mx, my, mw, mh = main
    rect = (mx + 8, my + 8, mw - 16, mh - 16)
    listing = s.add(window, "shop.results", "list", "Results", rect)
    for product, row in visible_rows(s, "shop.results", results(data, ui, recommended=s.drift.recommended, seed=s.seed), rect, 32):
        label = f"{product.name} - {product.price} - rating {product.rating:.1f}"
        s.add(
            listing,
            f"shop.item.{product.id}",
            "listitem",
            label,
            row,
            intent=("pick", product.id),
            states=("selected",) if ui.view.get("shop.picked") == product.id else (),
        )
    picked = next((p for p in data.catalog if p.id == ui.view.get("shop.picked")), None)
    if picked is not None:
        sx, sy, sw, _ = side
        pane = s.add(window, "shop.detail", "group", picked.name, (sx + 8, sy + 8, sw - 16, 220))
        s.add(pane, "shop.detail.price", "text", f"Price: {picked.price}", (sx + 16, sy + 40, sw - 32, 24))
        s.add(pane, "shop.detail.rating", "text", f"Rating: {picked.rating:.1f} / 5", (sx + 16, sy + 68, sw - 32, 24))
        s.add(pane, "shop.detail.category", "text", f"Category: {picked.category}", (sx + 16, sy + 96, sw - 32, 24))
        s.add(pane, "shop.buy", "button", "Buy now", (sx + 16, sy + 140, 160, 32), intent=("buy",))
    ad_overlay(s, window, toolbar, "shop")


def act(intent: Intent, data: AppData, ui: Ui) -> str:
    verb = intent[0]
    if verb == "search":
        ui.view.update({"shop.searched": ui.fields.get("shop.query", "").strip(), "shop.picked": ""})
        ui.scroll["shop.results"] = 0
        return f"{len(ops.shop_search(data, ui.view['shop.searched']))} results"
    if verb == "sort":
        ui.view["shop.sort"] = "" if ui.view.get("shop.sort") == "price" else "price"
        return "sorted by price" if ui.view["shop.sort"] else "recommended order"
    if verb == "pick":
        ui.view["shop.picked"] = intent[1]
        return f"showing {intent[1]}"
    if verb == "buy":
        if not ui.view.get("shop.picked"):
            raise ops.OpError("pick a product first")
        product = ops.shop_buy(data, ui.view["shop.picked"])
        return f"bought {product.name} for {product.price}"
    raise ops.OpError(f"the shop has no action {verb!r}")
