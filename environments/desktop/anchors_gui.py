"""The GUI-only anchor: every goal through clicks, typing, keys and drags, by the names controls have in
version 1 of each app (the priors a user keeps). It dismisses any promotion it sees before acting, so ads cost
it steps; a control renamed by drift ("Reply" -> "Respond") it cannot find, and it gives up (submits).
"""

from __future__ import annotations

import re
from typing import Any

from environments.desktop.anchors import Script, ScriptPolicy, call, parse_screen

_PRICE = re.compile(r" - \$(?P<price>[0-9.]+) - rating (?P<rating>[0-9.]+)$")


class GiveUp(Exception):
    """A control the anchor's priors name is not on screen."""


class GuiOnly(ScriptPolicy):
    name = "gui-only"

    def script(self, start: dict[str, Any]) -> Script:
        self.screen = parse_screen(str(start.get("screen", "")))
        try:
            for goal in start.get("goals", []):
                yield from getattr(self, "_" + goal["kind"].replace("-", "_"))(goal)
        except GiveUp:
            pass
        yield call("submit")

    # --- acting on what is on screen --------------------------------------------------------------------

    def do(self, name: str, **arguments: Any) -> Script:
        """One call, after closing whatever promotion is showing; the screen it answers with becomes current."""
        for _ in range(3):
            ad = next((e for e in self.screen if e["role"] == "button" and "ad" in e["states"]), None)
            if ad is None:
                break
            yield from self._send("click", id=ad["id"])
        yield from self._send(name, **arguments)

    def _send(self, name: str, **arguments: Any) -> Script:
        content = yield call(name, **arguments)
        if "screen" in content:
            self.screen = parse_screen(str(content["screen"]))

    def find(self, role: str, name: str = "", *, contains: tuple[str, ...] = (), prefix: str = "") -> dict[str, Any] | None:
        for e in self.screen:
            if (
                e["role"] == role
                and (not name or e["name"] == name)
                and all(c in e["name"] for c in contains)
                and e["id"].startswith(prefix)
            ):
                return e
        return None

    def need(self, role: str, name: str = "", **kw: Any) -> str:
        found = self.find(role, name, **kw)
        if found is None or "ad" in found["states"]:
            raise GiveUp(f"no {role} {name!r}")
        return str(found["id"])

    def click(self, role: str, name: str = "", **kw: Any) -> Script:
        yield from self.do("click", id=self.need(role, name, **kw))

    # --- one script per goal kind -------------------------------------------------------------------------

    def _move_files(self, goal: dict[str, Any]) -> Script:
        yield from self.do("open_app", app="files")
        yield from self.click("listitem", goal["from"].rsplit("/", 1)[1], prefix="files.dir.")
        for name in goal["names"]:
            source, target = (
                self.need("listitem", name, prefix="files.entry."),
                self.need("listitem", goal["to"].rsplit("/", 1)[1], prefix="files.dir."),
            )
            yield from self.do("drag", from_id=source, to_id=target)

    def _reply_mail(self, goal: dict[str, Any]) -> Script:
        yield from self.do("open_app", app="mail")
        yield from self.click("listitem", contains=(goal["sender"], goal["subject"]))
        yield from self.click("button", "Reply")
        yield from self.do("type", text=goal["body"])
        yield from self.click("button", "Send")

    def _change_setting(self, goal: dict[str, Any]) -> Script:
        yield from self.do("open_app", app="settings")
        yield from self.click("tab", goal["section"].title())
        box = self.find("checkbox", goal["label"])
        if box is not None:
            if ("checked" in box["states"]) != (goal["value"] == "on"):
                yield from self.click("checkbox", goal["label"])
        else:
            yield from self.click("button", goal["value"], prefix="settings.")

    def _edit_cell(self, goal: dict[str, Any]) -> Script:
        yield from self.do("open_app", app="table")
        row = self.need("row", goal["row"]).rsplit(".", 1)[1]
        column = self.need("cell", goal["column"], prefix="table.cell.0.").rsplit(".", 1)[1]
        yield from self.do("click", id=f"table.cell.{row}.{column}")
        yield from self.do("type", text=goal["value"])
        yield from self.do("key", combo="enter")
        yield from self.click("button", "Save")

    def _schedule_event(self, goal: dict[str, Any]) -> Script:
        yield from self.do("open_app", app="calendar")
        yield from self.click("button", "New event")
        for i, field in enumerate(("title", "date", "time")):
            if i:
                yield from self.do("key", combo="tab")
            yield from self.do("type", text=goal[field])
        yield from self.click("button", "Save")

    def _buy_cheapest(self, goal: dict[str, Any]) -> Script:
        yield from self.do("open_app", app="shop")
        yield from self.click("button", "Sort by price")
        seen: dict[str, float] = {}
        for scan in range(2):  # the list may be longer than the window: look at the top, then the bottom
            for e in self.screen:
                m = _PRICE.search(e["name"]) if e["id"].startswith("shop.item.") else None
                if (
                    m
                    and goal["category"] in e["name"]
                    and float(m["rating"]) >= goal["min_rating"]
                    and float(m["price"]) < goal["max_price"]
                ):
                    seen[e["id"]] = float(m["price"])
            if scan == 0:
                yield from self.do("scroll", direction="down", amount=20)
        if not seen:
            raise GiveUp("nothing fits")
        best = min(seen, key=lambda i: (seen[i], i))
        if self.find("listitem", prefix=best) is None:
            yield from self.do("scroll", direction="up", amount=20)
        yield from self.do("click", id=best)
        yield from self.click("button", "Buy now")
