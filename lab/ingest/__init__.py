"""Trajectory ingest: foreign formats in, canonical records out; exporters back out. No Django here.

    from lab.ingest import import_payload, IngestError, export_openai
    result = import_payload(data, filename="results.json", format="auto")
    result.format, result.records, result.episodes[0].raw, result.report["redactions"]

Formats: native, openai, atif, taubench, tau2, inspect, sharegpt; in a single JSON value, a JSON list,
JSON Lines, or a zip of such files (inspect `.eval` archives included). Foreign records get
`header.source = "upload"` and `header.meta.format`; each episode's original payload is returned beside
its record (`ImportedEpisode.raw`), never inside it.
"""

from lab.ingest.collector import collector_paused
from lab.ingest.detect import FORMAT_NAMES, FORMATS
from lab.ingest.errors import IngestError
from lab.ingest.export import ConversationError, conversation_problems, export_native, export_openai
from lab.ingest.native_fast import NativeRecord, read_native
from lab.ingest.pipeline import DEFAULT_MAX_RECORDS, EpisodeSummary, ImportedEpisode, ImportResult, build_report, import_payload
from lab.ingest.redaction import DEFAULT_REDACTION_PATTERNS, Redactor

__all__ = [
    "ConversationError",
    "DEFAULT_MAX_RECORDS",
    "DEFAULT_REDACTION_PATTERNS",
    "EpisodeSummary",
    "FORMATS",
    "FORMAT_NAMES",
    "ImportResult",
    "ImportedEpisode",
    "IngestError",
    "NativeRecord",
    "Redactor",
    "build_report",
    "collector_paused",
    "conversation_problems",
    "export_native",
    "export_openai",
    "import_payload",
    "read_native",
]
