"""`practicum`: upload, export and evaluate from a shell. URL and key come from the environment or the config file.

practicum upload results.jsonl --format auto --project acme
practicum export dataset.jsonl --format openai --filter task=toolgym/lookup --filter passed=true
practicum evaluate --agent expert --task-set toolgym/lookup --seeds 0,1,2 --wait
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from practicum_client.client import Client
from practicum_client.episodes import FORMATS, Progress
from practicum_client.errors import PracticumError


def _filters(pairs: Sequence[str]) -> dict[str, str]:
    filters = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name:
            raise PracticumError("invalid_filter", f"--filter {pair!r}: write NAME=VALUE, e.g. task=toolgym/lookup")
        filters[name] = value
    return filters


def _seeds(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise PracticumError("invalid_seeds", f"--seeds {text!r}: comma-separated integers, e.g. 0,1,2") from None


def _connection_options(parser: argparse.ArgumentParser, default: Any) -> None:
    parser.add_argument("--url", default=default, help="the server (default: PRACTICUM_URL or the config file)")
    parser.add_argument("--key", default=default, help="an API key (default: PRACTICUM_API_KEY or the config file)")
    parser.add_argument("--project", default=default, help="the project slug (default: PRACTICUM_PROJECT, or the key's project)")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="practicum", description="Send trajectories to a Practicum server, export datasets, evaluate.")
    _connection_options(parser, None)
    # The same options after the command (`practicum upload FILE --project acme`); absent there, they leave the first.
    shared = argparse.ArgumentParser(add_help=False)
    _connection_options(shared, argparse.SUPPRESS)
    commands = parser.add_subparsers(dest="command", required=True)
    upload = commands.add_parser(
        "upload", parents=[shared], help="upload a trajectory file (resumes an interrupted upload of the same file)"
    )
    upload.add_argument("file")
    upload.add_argument("--format", default="auto", choices=FORMATS)
    upload.add_argument("--batch-size", type=int, default=100)
    upload.add_argument("--restart", action="store_true", help="start over instead of resuming")
    export = commands.add_parser("export", parents=[shared], help="export matching episodes to a JSONL file")
    export.add_argument("file")
    export.add_argument("--format", default="openai", choices=("openai", "native"))
    export.add_argument("--filter", action="append", default=[], metavar="NAME=VALUE", help="an episode filter; repeatable")
    evaluate = commands.add_parser("evaluate", parents=[shared], help="run an evaluation on the server")
    evaluate.add_argument("--agent", required=True)
    evaluate.add_argument("--task-set", required=True)
    evaluate.add_argument("--seeds", required=True, type=_seeds, help="comma-separated, e.g. 0,1,2")
    evaluate.add_argument("--wait", action="store_true", help="wait for it to end, showing progress, and print its figures")
    evaluate.add_argument("--timeout", type=float, default=None, help="seconds to wait at most")
    return parser


def _run(args: argparse.Namespace, client: Client) -> dict[str, Any]:
    if args.command == "upload":

        def shown(progress: Progress) -> None:
            print(f"\rbatch {progress.batch + 1}: {progress.episodes} episodes acknowledged", end="", file=sys.stderr, flush=True)

        result = client.episodes.upload(args.file, format=args.format, batch_size=args.batch_size, resume=not args.restart, progress=shown)
        print(file=sys.stderr)
        return {"episodes": len(result.episode_ids), "created": result.created, "already_stored": result.already_stored,
                "batches_sent": result.batches_sent, "batches_resumed": result.batches_skipped, "episode_ids": result.episode_ids}  # fmt: skip
    if args.command == "export":
        exported = client.datasets.export(args.file, format=args.format, **_filters(args.filter))
        return {"file": str(exported.path), "lines": exported.lines, "bytes": exported.bytes}
    evaluation = client.evaluations.start(agent=args.agent, task_set=args.task_set, seeds=args.seeds)
    if not args.wait:
        return evaluation

    def bar(fraction: float) -> None:
        filled = int(fraction * 30)
        print(f"\r[{'#' * filled}{'.' * (30 - filled)}] {fraction:4.0%}", end="", file=sys.stderr, flush=True)

    done = client.evaluations.wait(int(evaluation["id"]), timeout_s=args.timeout, progress=bar)
    print(file=sys.stderr)
    return done


def main(argv: Sequence[str] | None = None) -> int:
    """Prints the answer as JSON on stdout; a refusal prints `error CODE: message` on stderr and exits 1 (2: usage)."""
    args = _parser().parse_args(argv)
    try:
        with Client(args.url, args.key, project=args.project) as client:
            print(json.dumps(_run(args, client), indent=2))
    except PracticumError as exc:
        print(f"error {exc.code}: {exc.message}", file=sys.stderr)
        return 1
    except TimeoutError as exc:
        print(f"error timeout: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
