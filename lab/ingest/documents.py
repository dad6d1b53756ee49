"""Bytes in, JSON documents out: single JSON, JSONL, zip archives and inspect_ai `.eval` logs.

Parsing is strict where `json.loads` is lenient: NaN/Infinity literals and overflowing floats are turned
into `NonFinite` markers (located afterwards by `find_problem`, so the error can name their field path),
nesting is bounded, and a RecursionError or an oversized integer becomes a clean `DocumentError`.
"""

from __future__ import annotations

import io
import json
import math
import re
import zipfile
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from lab.ingest.budget import ByteBudget
from lab.ingest.errors import join_path

MAX_DOCUMENT_DEPTH = 64  # raw payloads nest deeper than records (inspect events); 64 is still far from absurd
MAX_ZIP_MEMBERS = 10_000
READ_CHUNK = 1 << 20  # zip members are unpacked this many bytes at a time, each chunk counted before the next
JSON_SUFFIXES = (".json", ".jsonl", ".ndjson")
ZIP_SUFFIXES = (".zip", ".eval")


class DocumentError(Exception):
    """A problem found before records exist; the pipeline adds the record index it had reached."""

    def __init__(self, path: str, reason: str, status: int = 400, *, file: str = "") -> None:
        super().__init__(reason)
        self.path = path
        self.reason = reason
        self.status = status
        self.file = file


@dataclass(frozen=True)
class NonFinite:
    literal: str


@dataclass
class Document:
    """One parsed JSON value, or (kind "eval") an inspect `.eval` archive: header plus named samples.

    `text` is the JSON text a "json" document was parsed from. `depth` is set when the fast parser read it:
    it refuses NaN/Infinity, so the value holds no `NonFinite`, and `depth` is its nesting (`nesting_depth`).
    """

    file: str
    value: Any
    kind: str = "json"
    samples: list[tuple[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)  # zip members that are no trajectory files
    text: str | None = None
    depth: int | None = None


def _parse_float(text: str) -> float | NonFinite:
    value = float(text)
    return value if math.isfinite(value) else NonFinite(text)


def loads_strict(text: str, *, file: str = "", line: int | None = None) -> Any:
    where = f"line {line}: " if line is not None else ""
    try:
        return json.loads(text, parse_constant=NonFinite, parse_float=_parse_float)
    except json.JSONDecodeError as error:
        position = f" (line {error.lineno}, column {error.colno})" if line is None else f" (column {error.colno})"
        raise DocumentError("", f"{where}not valid JSON: {error.msg}{position}", file=file) from None
    except RecursionError:
        raise DocumentError("", f"{where}nested too deep to parse (more than {MAX_DOCUMENT_DEPTH} levels allowed)", file=file) from None
    except ValueError as error:  # e.g. an integer with more digits than Python converts
        raise DocumentError("", f"{where}not valid JSON: {error}", file=file) from None


def loads_fast(text: str) -> tuple[Any, int] | None:
    """(value, nesting depth) read by orjson, or None where `loads_strict` must read the text.

    orjson refuses NaN/Infinity, overflowing floats, lone surrogates and control characters, which
    loads_strict then reports precisely. It reads integers beyond 64 bits as floats, so a run of 19 or more
    digits (an integer that may not fit, or a long fraction) goes to loads_strict too.
    """
    data = text.encode()
    if has_long_digit_run(data):
        return None
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value, nesting_depth(data)


_DIGITS_AS_ZERO = bytes.maketrans(b"0123456789", b"0000000000")


def has_long_digit_run(data: bytes) -> bool:
    """19 digits or more in a row: an integer that may not fit 64 bits, or a long fraction. Fast parsers may read
    these otherwise than Python's json, so such text goes to the strict parser."""
    return b"0" * 19 in data.translate(_DIGITS_AS_ZERO)


_NOT_QUOTE_OR_BRACKET = bytes(c for c in range(256) if c not in b'"[]{}')
_BRACKETS_AS_PARENS = bytes.maketrans(b"[]{}", b"()()")


def nesting_depth(data: bytes, limit: int = MAX_DOCUMENT_DEPTH) -> int:
    """Containers nested in the valid JSON text `data`: 0 for a scalar, 1 for `[1]`, 2 for `[{}]`; above `limit` means "too deep".

    No value lies deeper than this (the top value at 0), so at most MAX_DOCUMENT_DEPTH leaves nothing for
    `find_problem` to find in an orjson-read value, and at most trajectory.MAX_DEPTH nothing for validate_record.
    Read off the text with bytes operations, several times faster than walking the parsed value.
    """
    if b"\\" in data:  # escaped backslashes and quotes neither open nor close a string
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = data.translate(None, _NOT_QUOTE_OR_BRACKET)
    # Dropping two adjacent quotes (an empty string, or one string's end and the next one's start) keeps every
    # other character inside or outside a string as it was; what remains are the strings holding brackets.
    skeleton = skeleton.replace(b'""', b"")
    if b'"' in skeleton:
        skeleton = b"".join(skeleton.split(b'"')[::2])
    skeleton = skeleton.translate(_BRACKETS_AS_PARENS)
    depth = 0
    while skeleton and depth <= limit:
        skeleton = skeleton.replace(b"()", b"")  # every innermost container goes, so each pass is one level
        depth += 1
    return depth


def find_problem(value: Any, path: str = "", depth: int = 0) -> tuple[str, str] | None:
    """The first NaN/Infinity or too-deep spot as (path, reason). Recursion stops at MAX_DOCUMENT_DEPTH."""
    if depth > MAX_DOCUMENT_DEPTH:
        return path, f"nested deeper than {MAX_DOCUMENT_DEPTH} levels"
    if isinstance(value, NonFinite):
        return path, f"{value.literal} is not a finite number (JSON numbers must be finite)"
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, (dict, list, NonFinite)):
                found = find_problem(item, join_path(path, str(key)), depth + 1)
                if found:
                    return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if isinstance(item, (dict, list, NonFinite)):
                found = find_problem(item, join_path(path, i), depth + 1)
                if found:
                    return found
    return None


# `\u0000`, or a `\uD800`-`\uDFFF` escape that is not half of a pair, after an even run of backslashes (so a
# real escape, not an escaped backslash followed by "u"): JSON allows them, but PostgreSQL cannot store them.
_UNSTORABLE_ESCAPE = re.compile(
    r"(?<!\\)(?:\\\\)*\\u(?:0000"
    r"|[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    r"|[dD][c-fC-F][0-9a-fA-F]{2})"
)
_HIGH_THEN_LOW = re.compile(r"\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}")


def unstorable_escape(text: str) -> str | None:
    """Why the JSON text holds a string that cannot be stored (NUL, lone surrogate), or None. One regex pass."""
    if "\\u" not in text:
        return None
    found = _UNSTORABLE_ESCAPE.search(_HIGH_THEN_LOW.sub("", text))
    if found is None:
        return None
    escape = found.group()[-6:]
    return f"{escape} is a NUL character" if escape == "\\u0000" else f"{escape} is a lone UTF-16 surrogate"


def _decode(data: bytes, file: str) -> str:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise DocumentError("", f"not UTF-8 text (byte {error.start})", file=file) from None
    why = unstorable_escape(text)
    if why:
        raise DocumentError("", f"{why}, which cannot be stored", file=file)
    return text


def _text_documents(data: bytes, file: str) -> Iterator[Document]:
    text = _decode(data, file)
    if not text.strip():
        raise DocumentError("", "the file is empty", file=file)
    if not file.lower().endswith((".jsonl", ".ndjson")):
        fast = loads_fast(text)
        if fast is not None:
            yield Document(file, fast[0], text=text, depth=fast[1])
            return
        try:
            yield Document(file, loads_strict(text, file=file), text=text)
            return
        except DocumentError as error:
            # "Extra data" after a complete first value on its own line means JSON Lines.
            if "Extra data" not in error.reason or "\n" not in text.strip():
                raise
    for number, line in enumerate(text.splitlines(), start=1):
        if line.strip():
            fast = loads_fast(line)
            if fast is not None:
                yield Document(file, fast[0], text=line, depth=fast[1])
            else:
                yield Document(file, loads_strict(line, file=file, line=number), text=line)


def _is_eval_archive(names: list[str]) -> bool:
    return ("header.json" in names or "_journal/start.json" in names) and any(n.startswith("samples/") for n in names)


def _read_member(archive: zipfile.ZipFile, info: zipfile.ZipInfo, file: str, budget: ByteBudget) -> bytes:
    """A member's bytes, counted against the budget chunk by chunk as they are unpacked (whatever the header claims)."""
    chunks: list[bytes] = []
    size = 0
    try:
        with archive.open(info) as handle:
            while chunk := handle.read(READ_CHUNK):
                budget.spend(len(chunk), what=f"zip member {info.filename}", file=file)
                size += len(chunk)
                if size > info.file_size:  # the header lied about the size: a crafted archive
                    raise DocumentError("", f"zip member {info.filename} is larger than its header says", file=file)
                chunks.append(chunk)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError) as error:
        # zipfile's words for a damaged, truncated, encrypted or oddly compressed member (a lying size ends as a bad CRC)
        raise DocumentError("", f"zip member {info.filename} cannot be unpacked: {error}", file=file) from None
    return b"".join(chunks)


def _zip_documents(data: bytes, file: str, *, budget: ByteBudget, nested: bool) -> Iterator[Document]:
    """Documents of a zip; one level of nested archives is read, spending the same budget as its parent."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile:
        raise DocumentError("", "not a readable zip archive", file=file) from None
    with archive:
        members = [i for i in archive.infolist() if not i.is_dir() and not _is_hidden(i.filename)]
        if len(members) > MAX_ZIP_MEMBERS:
            raise DocumentError("", f"at most {MAX_ZIP_MEMBERS} files per archive, got {len(members)}", 413, file=file)
        budget.check_declared(sum(i.file_size for i in members), what="the archive", file=file)
        names = [i.filename for i in members]
        if _is_eval_archive(names):
            yield _eval_document(archive, members, file, budget)
            return
        skipped: list[str] = []
        for info in sorted(members, key=lambda i: i.filename):
            name = info.filename
            lowered = name.lower()
            if lowered.endswith(ZIP_SUFFIXES) and not nested:
                yield from _zip_documents(_read_member(archive, info, name, budget), name, budget=budget, nested=True)
            elif lowered.endswith(JSON_SUFFIXES):
                yield from _text_documents(_read_member(archive, info, name, budget), name)
            else:
                skipped.append(name)
        if skipped:
            yield Document(file, None, kind="skipped", skipped=skipped)


def _eval_document(archive: zipfile.ZipFile, members: list[zipfile.ZipInfo], file: str, budget: ByteBudget) -> Document:
    """An inspect `.eval` log: header.json (or the journal's start.json while running) plus samples/*.json."""
    by_name = {i.filename: i for i in members}
    header_name = "header.json" if "header.json" in by_name else "_journal/start.json"
    header = loads_strict(_decode(_read_member(archive, by_name[header_name], header_name, budget), header_name), file=header_name)
    samples = []
    for name in sorted((n for n in by_name if n.startswith("samples/") and n.endswith(".json")), key=_sample_order):
        samples.append((name, loads_strict(_decode(_read_member(archive, by_name[name], name, budget), name), file=name)))
    return Document(file or "log.eval", header, kind="eval", samples=samples)


def _sample_order(name: str) -> tuple[Any, ...]:
    """`samples/12_epoch_2.json` sorts by (epoch, id) with numeric ids in numeric order."""
    stem = name.removeprefix("samples/").removesuffix(".json")
    sample_id, _, epoch = stem.rpartition("_epoch_")
    return (int(epoch) if epoch.isdigit() else 0, (0, int(sample_id), "") if sample_id.isdigit() else (1, 0, sample_id))


def _is_hidden(name: str) -> bool:
    return name.startswith("__MACOSX/") or any(part.startswith(".") for part in name.split("/"))


def read_documents(data: bytes, *, filename: str = "", budget: ByteBudget | None = None) -> Iterator[Document]:
    """Every JSON document in an upload, lazily, so a bad line late in a file is found after the good ones.

    Unzipped bytes are spent from `budget` (lab.ingest.budget; BudgetExceeded past it); the upload's own
    bytes are not, since they are already bounded by the upload limit.
    """
    if data[:4] == b"PK\x03\x04" or filename.lower().endswith(ZIP_SUFFIXES):
        yield from _zip_documents(data, filename, budget=budget or ByteBudget(1 << 30), nested=False)
    else:
        yield from _text_documents(data, filename)
