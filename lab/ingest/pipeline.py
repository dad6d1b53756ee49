"""`import_payload`: bytes of an upload -> validated canonical records, all or nothing.

    result = import_payload(data, filename="run.jsonl")          # format detected by shape
    for episode in result.episodes:                                # ImportedEpisode
        store(episode.record, raw=episode.raw, content_hash=episode.content_hash)
    result.report                                                  # JSON-able: formats, unmapped paths, redactions

Every record is mapped, redacted and validated before anything is returned, so a caller that stores
the result inside one transaction stores either the whole upload or (on IngestError) nothing.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from environments.records import Record
from environments.trajectory import content_hash, validate_record
from lab.ingest.budget import BudgetExceeded, ByteBudget
from lab.ingest.detect import FORMAT_NAMES, FORMATS, Split, Unit, split_document, unit_index_for
from lab.ingest.documents import MAX_DOCUMENT_DEPTH, Document, DocumentError, find_problem, read_documents
from lab.ingest.errors import IngestError, join_path
from lab.ingest.export import conversation_problems
from lab.ingest.native_fast import read_native
from lab.ingest.reader import RecordContext
from lab.ingest.redaction import PatternSpec, Redactor, record_sampled_ids_dropped
from lab.ingest.shared import SharedValues

DEFAULT_MAX_RECORDS = 10_000
DEFAULT_MAX_EXPANDED_BYTES = 1 << 30  # when the caller names no upload limit either
DEFAULT_MAX_EXPANSION_RATIO = 50.0  # expanded / uploaded bytes; JSON compresses about 10x, bombs 1000x
DEFAULT_EXPANSION_FLOOR = 16 << 20  # the ratio limit never goes below this many bytes


@dataclass
class ImportedEpisode:
    """One validated record with what the lab stores beside it.

    `raw` is the episode's original payload (redacted): the list element, JSONL line, tau2 simulation or
    inspect sample it came from; for a native record read by the fast path (lab.ingest.native_fast), the
    record itself, which holds everything that element held. `unmapped` lists the field paths (in the
    uploaded document) that were not mapped onto the record; their values survive only in `raw`. Record and
    raw may share nested objects: copy before mutating either.
    """

    record: Record
    raw: Any
    format: str
    unmapped: list[str] = field(default_factory=list)
    redactions: int = 0
    file: str = ""
    origin: str = ""

    @functools.cached_property
    def content_hash(self) -> str:
        return content_hash(self.record)


@dataclass
class ImportResult:
    format: str  # the detected format, or "mixed" when an upload holds several
    episodes: list[ImportedEpisode]
    report: dict[str, Any]

    @property
    def records(self) -> list[Record]:
        return [episode.record for episode in self.episodes]


def import_payload(
    data: bytes | str,
    *,
    filename: str = "",
    format: str = "auto",
    redaction_patterns: PatternSpec | Redactor | None = None,
    max_records: int = DEFAULT_MAX_RECORDS,
    max_bytes: int | None = None,
    max_expanded_bytes: int | None = None,
    max_expansion_ratio: float = DEFAULT_MAX_EXPANSION_RATIO,
    expansion_floor: int = DEFAULT_EXPANSION_FLOOR,
) -> ImportResult:
    """Parse, detect, map, redact and validate an upload. Raises IngestError on the first bad record.

    `redaction_patterns`: None for the defaults, a mapping or list of (kind, regex) to replace them
    ([] disables text patterns), or a ready Redactor. `max_expanded_bytes`: the one budget of bytes that
    decoding may produce (unzipping at every level, attachment expansion; lab.ingest.budget), 4 x `max_bytes`
    by default; past it the upload is refused with status 413 and code "too_large". `max_expansion_ratio`: the
    same budget relative to the upload's own size (never below `expansion_floor` bytes; 0 turns it off); the
    tighter limit applies, and the refusal names it. Shared context that a container's episodes each carry
    (tau2's run info, inspect's plan; lab.ingest.shared) is spent from the budget once per distinct value, as
    the lab stores it.
    """
    if format not in FORMAT_NAMES:
        raise IngestError(0, "format", f"unknown format {format!r}; expected one of {', '.join(FORMAT_NAMES)}")
    if isinstance(data, str):
        data = data.encode()
    if max_bytes is not None and len(data) > max_bytes:
        raise IngestError(0, "", f"the upload is {len(data)} bytes; at most {max_bytes} allowed", 413, file=filename)
    redactor = redaction_patterns if isinstance(redaction_patterns, Redactor) else Redactor(redaction_patterns)
    if format in ("native", "auto"):
        natives = _read_native(data, filename, redactor, max_records)
        if natives is not None:
            return ImportResult("native", natives, _report(natives, ["native"], [], []))
    budget = ByteBudget(
        max_expanded_bytes or (4 * max_bytes if max_bytes else DEFAULT_MAX_EXPANDED_BYTES),
        stored=len(data),
        ratio=max_expansion_ratio,
        floor=expansion_floor,
    )
    episodes: list[ImportedEpisode] = []
    try:
        return _import_documents(data, filename, format, redactor, max_records, budget, episodes)
    except BudgetExceeded as error:
        raise IngestError(len(episodes), "", error.reason, 413, file=error.file or filename, code="too_large") from None


def _import_documents(
    data: bytes, filename: str, format: str, redactor: Redactor, max_records: int, budget: ByteBudget, episodes: list[ImportedEpisode]
) -> ImportResult:
    """The general path; `episodes` is filled in place so that an error can name the record index reached."""
    document_unmapped: list[str] = []
    skipped: list[str] = []
    shared = SharedValues()
    for document in _documents(data, filename, episodes, budget):
        if document.kind == "skipped":
            skipped.extend(document.skipped)
            continue
        split = _split_checked(document, format, len(episodes))
        document_unmapped.extend(f"{document.file}:{path}" if document.file else path for path in split.unmapped)
        # One scan of the document's text instead of a walk over each of its strings, when it proves there is nothing to redact.
        walk_raw = document.text is None or redactor.may_hold_secrets(document.text)
        for unit in split.units:
            if len(episodes) >= max_records:
                raise IngestError(len(episodes), unit.origin, f"too many records: at most {max_records} per upload", 413, file=unit.file)
            episode = _import_unit(unit, len(episodes), redactor, walk_raw=walk_raw, depth=document.depth, budget=budget)
            _spend_shared_context(episode, shared, budget)
            episodes.append(episode)
    if not episodes:
        raise IngestError(0, "", "the upload holds no records", file=filename)
    formats = sorted({episode.format for episode in episodes})
    return ImportResult(formats[0] if len(formats) == 1 else "mixed", episodes, _report(episodes, formats, document_unmapped, skipped))


def _spend_shared_context(episode: ImportedEpisode, shared: SharedValues, budget: ByteBudget) -> None:
    """The lab stores each distinct shared value of a header (a container's run info, task, plan) once per project:
    spend it the first time the upload holds it, not once per episode that copies it."""
    _, refs, fresh = shared.factor(episode.record["header"])
    if fresh:
        what = f"the shared context ({', '.join(refs)}; stored once for all the episodes that hold it)"
        budget.spend(fresh, what=what, file=episode.file)


def _read_native(data: bytes, filename: str, redactor: Redactor, max_records: int) -> list[ImportedEpisode] | None:
    """The fast path's episodes (lab.ingest.native_fast), or None for the general path."""
    upload = read_native(data, filename=filename, redactor=redactor, max_records=max_records)
    if upload is None:
        return None
    episodes = []
    for native in upload:
        steps = native.steps()
        if steps is None:
            return None
        record = native.as_dict(steps)
        episodes.append(ImportedEpisode(record, record, "native", [], 0, filename, native.origin))
    return episodes


def _documents(data: bytes, filename: str, episodes: list[ImportedEpisode], budget: ByteBudget) -> Iterator[Document]:
    """The upload's documents; a parse error is reported at the record index reached so far."""
    documents = read_documents(data, filename=filename, budget=budget)
    while True:
        try:
            document = next(documents)
        except StopIteration:
            return
        except DocumentError as error:
            raise IngestError(len(episodes), error.path, error.reason, error.status, file=error.file or filename) from None
        yield document


def _split_checked(document: Document, fmt: str, first_index: int) -> Split:
    """Split a document into units, refusing NaN/Infinity and absurd nesting with the unit they sit in."""
    problem = find_problem(document.value) if document.depth is None or document.depth > MAX_DOCUMENT_DEPTH else None
    if problem is not None:
        try:
            units = split_document(document, fmt, first_index).units
        except IngestError:
            units = []
        path, reason = problem
        raise IngestError(unit_index_for(path, units, first_index), path, reason, file=document.file)
    split = split_document(document, fmt, first_index)
    if document.kind == "eval":
        for offset, unit in enumerate(split.units):
            found = find_problem(unit.raw)
            if found is not None:
                raise IngestError(first_index + offset, found[0], found[1], file=unit.file)
    return split


def _import_unit(
    unit: Unit, index: int, redactor: Redactor, *, walk_raw: bool = True, depth: int | None = None, budget: ByteBudget | None = None
) -> ImportedEpisode:
    """`walk_raw=False`: the document's text showed nothing to redact. `depth`: the document's checked nesting."""
    ctx = RecordContext(index, unit.file, budget=budget)
    raw, redactions = redactor.redact(unit.raw) if walk_raw else (unit.raw, 0)
    record = FORMATS[unit.format].to_record(raw, unit.origin, ctx, unit.context)
    later = 0
    checked_depth = None
    if unit.format != "native":  # a native record is the redacted raw itself; others add context and parsed arguments
        record, later = redactor.redact(record)
    elif depth is not None:
        checked_depth = max(depth, 4)  # the raw's own nesting, or make_step's empty lists inside steps inside the record
    if redactions + later:
        record = record_sampled_ids_dropped(record)
    errors = validate_record(record, checked_depth=checked_depth)
    if errors:
        path = re.sub(r"^record\.?", "", errors[0].path)
        if unit.format == "native":
            raise IngestError(index, join_path(unit.origin, path), errors[0].reason, file=unit.file)
        raise IngestError(index, unit.origin, f"the mapped trajectory record is invalid at {path}: {errors[0].reason}", file=unit.file)
    return ImportedEpisode(record, raw, unit.format, ctx.unmapped, redactions + later, unit.file, unit.origin)


def _report(episodes: list[ImportedEpisode], formats: list[str], document_unmapped: list[str], skipped: list[str]) -> dict[str, Any]:
    summaries = [
        EpisodeSummary(
            e.format,
            e.file,
            e.origin,
            len(e.record["steps"]),
            e.content_hash,
            e.redactions,
            e.unmapped,
            conversation_problems(e.record["steps"]),
        )
        for e in episodes
    ]
    return build_report(summaries, formats, document_unmapped, skipped)


@dataclass
class EpisodeSummary:
    """What an import report says of one episode."""

    format: str
    file: str
    origin: str
    steps: int
    content_hash: str
    redactions: int = 0
    unmapped: list[str] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # why it cannot be exported as a chat conversation (export.conversation_problems)


def build_report(
    summaries: list[EpisodeSummary], formats: list[str], document_unmapped: list[str] | None = None, skipped: list[str] | None = None
) -> dict[str, Any]:
    """The import report: formats, counts, redactions, what was not mapped, and a line per episode.

    An episode stored with `problems` is kept whole but left out of chat (OpenAI) exports, which say why.
    """
    summary: Counter[str] = Counter(re.sub(r"\[\d+\]", "[]", path) for episode in summaries for path in episode.unmapped)
    return {
        "format": formats[0] if len(formats) == 1 else "mixed",
        "formats": formats,
        "records": len(summaries),
        "steps": sum(episode.steps for episode in summaries),
        "redactions": sum(episode.redactions for episode in summaries),
        "unmapped_summary": dict(summary.most_common()),
        "document_unmapped": document_unmapped or [],
        "skipped_files": skipped or [],
        "not_chat_exportable": sum(bool(episode.problems) for episode in summaries),
        "episodes": [
            {
                "index": i,
                "format": episode.format,
                "file": episode.file,
                "origin": episode.origin,
                "steps": episode.steps,
                "redactions": episode.redactions,
                "unmapped": episode.unmapped,
                "content_hash": episode.content_hash,
                "problems": episode.problems,
            }
            for i, episode in enumerate(summaries)
        ],
    }
