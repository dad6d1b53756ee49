"""WorkdeskEnv: a day's office task over a seeded organisation's shared drive, ending in a written deliverable.

Tools
    list_files (paths, kinds and sizes; `show_content` opens every listed file, the play panel's browser),
    read_file (a line range; spreadsheets and slides rendered as text, `raw` for their JSON), search (lines
    containing a text), write_file and edit_file (only under out/), calc (the calculation language of
    calc.py over workspace tables), submit (ends the episode).

Rewards
    0 on every step but the last, which carries the grade (rubric.py): the rubric score times the execution
    audit (the share of cited files the agent read: shown by list_files, loaded by calc, or at least half of
    its lines through read_file), 0 when a gate refuses the deliverable. Passing needs
    every critical item, a full audit and the task's threshold.

Episode End
    "agent_stop" on submit, or "max_steps" after MAX_CALLS calls (graded as it stands).

Arguments
    The task picks the occupation template; the seed the organisation, its files and the task's subject.
    Nothing from the host is read: the workspace is a dict of rendered text.

Version History
    1: first version.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from environments.budgeted import CallLedger, WorldEnv
from environments.core import Event, Observation, Score, StepResult, TaskSpec, ToolCall, ToolSpec
from environments.workdesk.calc import CalcError, Table, evaluate, plain
from environments.workdesk.graph import build_graph
from environments.workdesk.render import render_workspace, table_of, view
from environments.workdesk.rubric import grade
from environments.workdesk.tasks import WorkTask, synthesize

MAX_CALLS = 60
MAX_FILE_CHARS = 8000  # a written file
MAX_OUT_FILES = 10
READ_LINES = 80  # lines one read_file returns at most
READ_SHARE = 0.5  # a file counts as read for the audit once this share of its lines was seen (a 3-line peek does not)
SEARCH_HITS = 30
_PATH = r"[A-Za-z0-9_]+(/[A-Za-z0-9_]+)*(\.[A-Za-z0-9_]+)+"  # no "..", no leading "/": paths are dict keys


def _tool(name: str, description: str, properties: dict[str, Any], required: tuple[str, ...] = ()) -> ToolSpec:
    return ToolSpec(
        name, description, {"type": "object", "properties": properties, "required": list(required), "additionalProperties": False}
    )


_P = {"type": "string", "maxLength": 120, "pattern": _PATH}
TOOLS = (
    _tool(
        "list_files",
        "List workspace files (path, kind, lines); show_content also opens each listed file.",
        {"under": {"type": "string", "maxLength": 60, "pattern": r"[a-z0-9_/]*"}, "show_content": {"type": "boolean"}},
    ),
    _tool(
        "read_file",
        f"Read a file's lines start..end (1-based, at most {READ_LINES}); sheets and slides come as text, raw=true for JSON.",
        {
            "path": _P,
            "start": {"type": "integer", "minimum": 1, "maximum": 100000},
            "end": {"type": "integer", "minimum": 1, "maximum": 100000},
            "raw": {"type": "boolean"},
        },
        ("path",),
    ),
    _tool(
        "search",
        "Lines containing a text (case-insensitive), as path:line: text.",
        {"text": {"type": "string", "minLength": 2, "maxLength": 80}},
        ("text",),
    ),
    _tool(
        "write_file",
        f"Write a file under out/ (at most {MAX_FILE_CHARS} characters).",
        {"path": _P, "content": {"type": "string", "maxLength": MAX_FILE_CHARS}},
        ("path", "content"),
    ),
    _tool(
        "edit_file",
        "Replace the one occurrence of old with new in a file under out/.",
        {"path": _P, "old": {"type": "string", "minLength": 1, "maxLength": 2000}, "new": {"type": "string", "maxLength": 2000}},
        ("path", "old", "new"),
    ),
    _tool(
        "calc",
        "Evaluate a program of the calculation language: arithmetic, table('path'), col, where, unique, lookup, sum, avg, ...",
        {"program": {"type": "string", "maxLength": 2000}},
        ("program",),
    ),
    _tool("submit", "Hand in the deliverable and end the episode.", {}),
)


@dataclass
class Desk(CallLedger):
    files: dict[str, str]
    task: WorkTask
    reads: set[str] = field(default_factory=set)  # files read whole: shown, loaded as a table, or READ_SHARE of their lines
    lines_seen: dict[str, set[int]] = field(default_factory=dict)  # read_file's ranges, per file


class WorkdeskEnv(WorldEnv):
    """The budgeted-step contract (a call after the end, unknown tools, bad arguments, the MAX_CALLS cap) is
    environments.budgeted.WorldEnv's; this class writes the tools."""

    name = "workdesk"
    version = "1"
    max_calls = MAX_CALLS
    world: Desk

    def __init__(self, task: TaskSpec, seed: int, **kwargs: Any) -> None:
        super().__init__(task, seed, **kwargs)
        self.world = self._new_desk()

    @property
    def desk(self) -> Desk:
        """The episode state, by its own name."""
        return self.world

    def _new_desk(self) -> Desk:
        # The graph is a pure function of the seed, so snapshots carry only the desk; restore keeps this graph.
        self.graph = build_graph(self.seed)
        files = render_workspace(self.graph)
        return Desk(files=files, task=synthesize(self.task.key, self.graph, files, self.seed))

    def reset(self) -> Observation:
        self.world = self._new_desk()
        return Observation(text=self.desk.task.brief, data={"deliverable": self.desk.task.deliverable, "files": len(self.desk.files)})

    def tools(self) -> list[ToolSpec]:
        return list(TOOLS)

    def _error(self, message: str) -> StepResult:
        return StepResult(content={"error": message}, is_error=True)

    def _read(self, path: str) -> Event:
        self.desk.reads.add(path)
        return Event(f"file:{path}", "content", op="read")

    def _run(self, call: ToolCall) -> StepResult:
        name, args = call.name, call.arguments
        if name in ("write_file", "edit_file") and not args["path"].startswith("out/"):
            return self._error(f"path: {args['path']!r} is read-only; write under out/")
        handler = {
            "submit": self._submit,
            "list_files": self._list_files,
            "calc": self._calc,
            "search": self._search,
            "read_file": self._read_file,
            "write_file": self._write_file,
            "edit_file": self._edit_file,
        }[name]
        return handler(args)

    def _submit(self, args: dict[str, Any]) -> StepResult:
        self.desk.finished, self.desk.reason = True, "agent_stop"
        return StepResult(content={"submitted": self.desk.task.deliverable in self.desk.files})

    def _list_files(self, args: dict[str, Any]) -> StepResult:
        files, under = self.desk.files, args.get("under", "").strip("/")
        chosen = [p for p in files if not under or p == under or p.startswith(under + "/")]
        rows: list[dict[str, Any]] = [{"path": p, "kind": p.rsplit(".", 1)[-1], "lines": files[p].count("\n")} for p in chosen]
        if not args.get("show_content"):
            return StepResult(content={"files": rows})
        rows = [dict(r, content=view(p, files[p])) for r, p in zip(rows, chosen, strict=True)]
        return StepResult(content={"files": rows}, events=[self._read(p) for p in chosen])

    def _calc(self, args: dict[str, Any]) -> StepResult:
        def loader(path: str) -> Table:
            if path not in self.desk.files:
                raise CalcError(f"table: no file {path!r}")
            self._read(path)  # a table computed over is a file read whole
            return table_of(path, self.desk.files[path])

        try:
            return StepResult(content={"value": plain(evaluate(args["program"], loader))})
        except CalcError as exc:
            return self._error(f"calc: {exc}")

    def _search(self, args: dict[str, Any]) -> StepResult:
        needle, hits = args["text"].lower(), []
        for path, text in self.desk.files.items():
            hits += [f"{path}:{i}: {line}" for i, line in enumerate(view(path, text).splitlines(), 1) if needle in line.lower()]
        return StepResult(content={"hits": hits[:SEARCH_HITS], "total": len(hits)})

    def _read_file(self, args: dict[str, Any]) -> StepResult:
        desk, path = self.desk, args["path"]
        if path not in desk.files:
            return self._error(f"path: no file {path!r}; list_files shows them")
        lines = (desk.files[path] if args.get("raw") else view(path, desk.files[path])).splitlines()
        start = args.get("start", 1)
        end = min(args.get("end", start + READ_LINES - 1), start + READ_LINES - 1, len(lines))
        seen = desk.lines_seen.setdefault(path, set())
        seen.update(range(start, end + 1))
        if len(seen) >= READ_SHARE * len(lines):
            desk.reads.add(path)
        body = "\n".join(f"{i}: {lines[i - 1]}" for i in range(start, end + 1))
        return StepResult(
            content={"path": path, "start": start, "end": end, "total_lines": len(lines), "text": body},
            events=[Event(f"file:{path}", "content", op="read")],
        )

    def _write_file(self, args: dict[str, Any]) -> StepResult:
        files, path, content = self.desk.files, args["path"], args["content"]
        if path not in files and sum(p.startswith("out/") for p in files) >= MAX_OUT_FILES:
            return self._error(f"path: at most {MAX_OUT_FILES} files under out/")
        before, files[path] = files.get(path), content
        return StepResult(content={"path": path, "chars": len(content)}, events=[Event(f"file:{path}", "content", before, content)])

    def _edit_file(self, args: dict[str, Any]) -> StepResult:
        files, path = self.desk.files, args["path"]
        if path not in files:
            return self._error(f"path: no file {path!r}")
        text = files[path]
        count = text.count(args["old"])
        if count != 1:
            return self._error(f"old: found {count} times in {path}; it must occur exactly once")
        updated = text.replace(args["old"], args["new"])
        if len(updated) > MAX_FILE_CHARS:
            return self._error(f"new: the file would have {len(updated)} characters, at most {MAX_FILE_CHARS}")
        files[path] = updated
        return StepResult(content={"path": path, "chars": len(updated)}, events=[Event(f"file:{path}", "content", text, updated)])

    def report(self) -> dict[str, Any]:
        """The grade with per-item evidence (rubric.grade) for the deliverable as it stands."""
        desk = self.desk
        sources = {p: t for p, t in desk.files.items() if not p.startswith("out/")}
        return grade(desk.task.items, desk.files.get(desk.task.deliverable), sources, desk.reads, self.task.pass_threshold)

    def score(self) -> Score:
        if not self.desk.finished:
            return Score(composite=0.0, passed=False, termination_reason=None)
        report = self.report()
        return Score(
            composite=report["score"],
            passed=report["passed"],
            termination_reason=self.desk.reason,
            components={"rubric": report["rubric"], "audit": report["audit"]},
            details=report,
        )

    def state_hash(self) -> str:
        d = self.desk
        seen = {p: sorted(lines) for p, lines in d.lines_seen.items()}
        state = {"files": d.files, "reads": sorted(d.reads), "seen": seen, "calls": d.calls, "finished": d.finished, "reason": d.reason}
        return hashlib.sha256(json.dumps(state, sort_keys=True).encode()).hexdigest()[:32]

    def summary(self) -> str:
        """Only what the agent was shown or did: the deliverable asked for, the files it read, its call count."""
        d = self.desk
        return f"deliverable: {d.task.deliverable}; files read: {', '.join(sorted(d.reads)) or 'none'}; calls: {d.calls}/{MAX_CALLS}"

    def status(self) -> dict[str, str]:
        d = self.desk
        return {
            "calls": f"{d.calls}/{MAX_CALLS} calls",
            "deliverable": f"{d.task.deliverable}: {'written' if d.task.deliverable in d.files else 'not yet'}",
        }
