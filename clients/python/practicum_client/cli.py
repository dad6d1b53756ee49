"""`practicum`: upload, export and evaluate from a shell. URL and key come from the environment or the config file.

practicum upload results.jsonl --format auto --project acme
practicum export dataset.jsonl --format openai --filter task=toolgym/lookup --filter passed=true
practicum evaluate --agent expert --task-set toolgym/lookup --seeds 0,1,2 --wait
practicum watch inspect ./logs            # upload each finished inspect_ai eval log, once
practicum watch tau2 ./data/simulations   # upload each new tau2-bench simulation, once
practicum proxy --upstream https://api.openai.com/v1 --listen 127.0.0.1:8787   # record every conversation through it
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from practicum_client.client import Client
from practicum_client.episodes import FORMATS, Progress
from practicum_client.errors import PracticumError
from practicum_client.harnesses import SOURCES
from practicum_client.watch import Handled, Watcher


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
    watch = commands.add_parser("watch", parents=[shared], help="upload a harness's result files from a folder as they are written")
    watch.add_argument("kind", choices=sorted(SOURCES), help="inspect: inspect_ai eval logs; tau2: tau2-bench results files")
    watch.add_argument("folder")
    watch.add_argument("--once", action="store_true", help="one pass over the folder, then exit (1 if anything was refused or unsent)")
    watch.add_argument("--interval", type=float, default=5.0, help="seconds between passes (default 5)")
    watch.add_argument("--settle", type=float, default=2.0, help="a file is read once unchanged this many seconds (default 2)")
    watch.add_argument("--state", default=None, help="the state file (default: one per folder under PRACTICUM_STATE_DIR)")
    proxy = commands.add_parser("proxy", parents=[shared], help="an OpenAI-compatible proxy recording every conversation as an episode")
    proxy.add_argument("--upstream", required=True, help="the model endpoint's base URL, e.g. https://api.openai.com/v1")
    proxy.add_argument("--listen", default="127.0.0.1:8787", type=_listen, help="HOST:PORT to serve on (default 127.0.0.1:8787)")
    proxy.add_argument("--idle", type=float, default=60.0, help="seconds without a request after which a conversation is uploaded")
    proxy.add_argument("--env", default=None, help="the environment name to file the episodes under")
    proxy.add_argument(
        "--token-env",
        default="PRACTICUM_PROXY_TOKEN",
        help="the variable holding the token callers present (generated and printed when it is unset)",
    )
    proxy.add_argument("--upstream-key-env", default=None, help="the variable holding the upstream's API key, sent as its bearer key")
    proxy.add_argument(
        "--forward-credentials",
        action="store_true",
        help="pass the caller's own Authorization and Cookie headers upstream (off: they stay at the proxy)",
    )
    return parser


def _listen(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: write HOST:PORT, e.g. 127.0.0.1:8787")
    return host.strip("[]"), int(port)


def _proxy(args: argparse.Namespace, client: Client) -> int:
    from practicum_client.proxy import RecordingProxy  # needs uvicorn (the `proxy` extra)

    if args.idle <= 0:
        raise PracticumError("invalid_idle", f"--idle {args.idle}: must be above 0")
    if not args.upstream.startswith(("http://", "https://")):
        raise PracticumError("invalid_upstream", f"--upstream {args.upstream!r}: must start with http:// or https://")
    host, port = args.listen
    upstream_key = None
    if args.upstream_key_env:
        upstream_key = os.environ.get(args.upstream_key_env)
        if not upstream_key:
            raise PracticumError("invalid_upstream_key", f"--upstream-key-env {args.upstream_key_env}: the variable is not set")
    token = os.environ.get(args.token_env) or None
    proxy = RecordingProxy(
        client,
        args.upstream,
        idle_s=args.idle,
        env=args.env,
        token=token,
        upstream_key=upstream_key,
        forward_credentials=args.forward_credentials,
    )
    print(
        f"recording proxy for {args.upstream} on http://{host}:{port}/v1 (conversations idle {args.idle:g}s are uploaded)", file=sys.stderr
    )
    if token is None:
        print(f"proxy token (give it as the harness's api_key, or as X-Practicum-Proxy-Token): {proxy.token}", file=sys.stderr)
    proxy.serve(host=host, port=port)
    return 0


def _watch(args: argparse.Namespace, client: Client) -> int:
    def shown(handled: Handled) -> None:
        print(
            json.dumps(
                {
                    "file": handled.file,
                    "outcome": handled.outcome,
                    "episode_ids": handled.episode_ids,
                    "replayed": handled.replayed,
                    "error": handled.error,
                }
            ),
            flush=True,
        )

    if args.interval <= 0:
        raise PracticumError("invalid_interval", f"--interval {args.interval}: must be above 0")
    watcher = Watcher(
        client,
        Path(args.folder),
        SOURCES[args.kind](),
        settle_s=args.settle,
        on_handled=shown,
        state_file=Path(args.state) if args.state else None,
    )
    if args.once:
        return int(any(h.outcome in ("refused", "unreachable") for h in watcher.pass_once()))
    print(f"watching {watcher.folder} for {args.kind} results (state: {watcher.state_file}); Ctrl-C stops", file=sys.stderr)
    with contextlib.suppress(KeyboardInterrupt):  # Ctrl-C is how a watcher is stopped
        watcher.run(interval_s=args.interval)
    return 0


def _run(args: argparse.Namespace, client: Client) -> dict[str, Any]:
    if args.command == "upload":

        def shown(progress: Progress) -> None:
            print(f"\rbatch {progress.batch + 1}: {progress.episodes} episodes acknowledged", end="", file=sys.stderr, flush=True)

        result = client.episodes.upload(args.file, format=args.format, batch_size=args.batch_size, resume=not args.restart, progress=shown)
        print(file=sys.stderr)
        return {
            "episodes": len(result.episode_ids),
            "created": result.created,
            "already_stored": result.already_stored,
            "batches_sent": result.batches_sent,
            "batches_resumed": result.batches_skipped,
            "episode_ids": result.episode_ids,
        }
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
            if args.command == "watch":
                return _watch(args, client)
            if args.command == "proxy":
                return _proxy(args, client)
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
