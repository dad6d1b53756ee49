"""A small shell over the desktop's own data: pure Python, never the host's shell or files.

    run_shell(data, ui, "mv Downloads/*.pdf Documents/Invoices")   # -> (output, is_error)

File commands: pwd, cd, ls, cat, grep (fixed strings, -i, -r), find (-name GLOB, -type f|d), mv, cp, mkdir,
sed -i 's/OLD/NEW/[g]' FILE (literal text, not a regex). App commands (shell_apps.py): mail, settings, shop,
cal, table. `*` and `?` in a path argument expand within its folder. Pipes, redirections, command chaining and
substitution are refused. Budgets: MAX_TOKENS arguments of at most MAX_TOKEN characters, MAX_OUTPUT characters
of output (the rest is cut with a note), MAX_MATCHES paths per glob or search.
"""

from __future__ import annotations

import fnmatch
import shlex
from collections.abc import Callable

import environments.desktop.ops as ops
from environments.desktop.shell_apps import APP_COMMANDS
from environments.desktop.state import HOME, AppData, Ui

MAX_TOKENS, MAX_TOKEN, MAX_OUTPUT, MAX_MATCHES = 64, 300, 4000, 100
Command = Callable[[AppData, Ui, list[str]], str]


def _cwd(data: AppData, ui: Ui) -> str:
    cwd = ui.view.get("shell.cwd", HOME)
    return cwd if cwd in data.dirs else HOME


def tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    try:
        words = list(lexer)
    except ValueError as exc:
        raise ops.OpError(f"cannot parse the command: {exc}") from None
    if any(w and set(w) <= set(";&|<>") for w in words):
        raise ops.OpError("pipes, redirections and chaining (| ; & < >) are not supported: run one command per call")
    if len(words) > MAX_TOKENS or any(len(w) > MAX_TOKEN for w in words):
        raise ops.OpError(f"at most {MAX_TOKENS} arguments of at most {MAX_TOKEN} characters each")
    return words


def expand(data: AppData, cwd: str, arg: str) -> list[str]:
    """A path argument as absolute paths: a glob in its last part matches that folder's entries."""
    if "*" not in arg and "?" not in arg:
        return [ops.resolve(arg, cwd)]
    folder, _, pattern = arg.rpartition("/")
    if "*" in folder or "?" in folder:
        raise ops.OpError(f"{arg[:60]!r}: wildcards only in the last part of a path")
    base = ops.resolve(folder or ("/" if arg.startswith("/") else "."), cwd)
    dirs, names = ops.list_dir(data, base)
    matches = [f"{base}/{n}" for n in sorted(dirs + names) if fnmatch.fnmatchcase(n, pattern)]
    if not matches:
        raise ops.OpError(f"{arg[:60]!r}: no match")
    return matches[:MAX_MATCHES]


def _paths(data: AppData, ui: Ui, args: list[str]) -> list[str]:
    return [p for a in args for p in expand(data, _cwd(data, ui), a)]


def _split_flags(args: list[str], allowed: str) -> tuple[set[str], list[str]]:
    flags = {c for a in args if a.startswith("-") and len(a) > 1 for c in a[1:]}
    if unknown := flags - set(allowed):
        raise ops.OpError(f"unknown option(s) -{''.join(sorted(unknown))}; allowed: -{allowed}")
    return flags, [a for a in args if not (a.startswith("-") and len(a) > 1)]


def _ls(data: AppData, ui: Ui, args: list[str]) -> str:
    out = []
    for path in _paths(data, ui, args or ["."]):
        if path in data.files:
            out.append(path.rsplit("/", 1)[1])
            continue
        dirs, names = ops.list_dir(data, path)
        out += [d + "/" for d in dirs] + names
    return "\n".join(out)


def _cat(data: AppData, ui: Ui, args: list[str]) -> str:
    if not args:
        raise ops.OpError("usage: cat FILE...")
    return "".join(ops.read(data, p) for p in _paths(data, ui, args))


def _under(data: AppData, root: str) -> list[str]:
    return sorted(p for p in data.files if p.startswith(root.rstrip("/") + "/"))


def _grep(data: AppData, ui: Ui, args: list[str]) -> str:
    flags, rest = _split_flags(args, "ir")
    if len(rest) < 2:
        raise ops.OpError("usage: grep [-i] [-r] TEXT PATH...")
    needle = rest[0].lower() if "i" in flags else rest[0]
    targets = [f for p in _paths(data, ui, rest[1:]) for f in (_under(data, p) if p in data.dirs and "r" in flags else [p])]
    hits = []
    for path in targets:
        for line in ops.read(data, path).splitlines():
            if needle in (line.lower() if "i" in flags else line):
                hits.append(f"{path}:{line}")
    return "\n".join(hits[:MAX_MATCHES])


def _find(data: AppData, ui: Ui, args: list[str]) -> str:
    root = ops.resolve(args[0], _cwd(data, ui)) if args and not args[0].startswith("-") else _cwd(data, ui)
    rest = args[1:] if args and not args[0].startswith("-") else args
    options = dict(zip(rest[::2], rest[1::2], strict=False))
    if len(rest) % 2 or set(options) - {"-name", "-type"} or options.get("-type", "f") not in ("f", "d"):
        raise ops.OpError("usage: find [PATH] [-name GLOB] [-type f|d]")
    if root not in data.dirs:
        raise ops.OpError(f"{root}: no such directory")
    kinds = {"f": sorted(data.files), "d": sorted(data.dirs)}
    chosen = kinds[options["-type"]] if "-type" in options else sorted(set(kinds["f"]) | set(kinds["d"]))
    pattern = options.get("-name", "*")
    found = [p for p in chosen if (p == root or p.startswith(root + "/")) and fnmatch.fnmatchcase(p.rsplit("/", 1)[1], pattern)]
    return "\n".join(found[:MAX_MATCHES])


def _mv_cp(move: bool) -> Command:
    def command(data: AppData, ui: Ui, args: list[str]) -> str:
        if len(args) < 2:
            raise ops.OpError(f"usage: {'mv' if move else 'cp'} SOURCE... DEST")
        cwd = _cwd(data, ui)
        sources, dest = _paths(data, ui, args[:-1]), ops.resolve(args[-1], cwd)
        if len(sources) > 1 and dest not in data.dirs:
            raise ops.OpError(f"{dest}: several sources need a destination folder")
        done = [(ops.move if move else ops.copy)(data, src, dest) for src in sources]
        return "\n".join(done)

    return command


def _mkdir(data: AppData, ui: Ui, args: list[str]) -> str:
    for path in [ops.resolve(a, _cwd(data, ui)) for a in args] or ["-"]:
        if path == "-":
            raise ops.OpError("usage: mkdir DIR...")
        ops.mkdir(data, path)
    return ""


def _sed(data: AppData, ui: Ui, args: list[str]) -> str:
    if len(args) != 3 or args[0] != "-i" or len(args[1]) < 4 or args[1][0] != "s":
        raise ops.OpError("usage: sed -i 's/OLD/NEW/[g]' FILE (literal text)")
    parts = args[1][2:].split(args[1][1])
    if len(parts) != 3 or not parts[0] or parts[2] not in ("", "g"):
        raise ops.OpError(f"sed: {args[1][:60]!r} is not s/OLD/NEW/ or s/OLD/NEW/g")
    path = ops.resolve(args[2], _cwd(data, ui))
    text = ops.read(data, path)
    if parts[0] not in text:
        raise ops.OpError(f"sed: {parts[0][:40]!r} does not occur in {path}")
    ops.write(data, path, text.replace(parts[0], parts[1], -1 if parts[2] else 1))
    return ""


def _cd(data: AppData, ui: Ui, args: list[str]) -> str:
    path = ops.resolve(args[0] if args else HOME, _cwd(data, ui))
    if path not in data.dirs:
        raise ops.OpError(f"{path}: no such directory")
    ui.view["shell.cwd"] = path
    return ""


COMMANDS: dict[str, Command] = {
    "pwd": lambda data, ui, args: _cwd(data, ui),
    "cd": _cd,
    "ls": _ls,
    "cat": _cat,
    "grep": _grep,
    "find": _find,
    "mv": _mv_cp(True),
    "cp": _mv_cp(False),
    "mkdir": _mkdir,
    "sed": _sed,
    **APP_COMMANDS,
}


def run_shell(data: AppData, ui: Ui, command: str) -> tuple[str, bool]:
    """(output, is_error). An error part-way through a multi-path command keeps what was already done, like mv."""
    words: list[str] = []
    try:
        words = tokens(command)
        if not words:
            return "", False
        if words[0] == "help":
            return "commands: " + " ".join(sorted([*COMMANDS, "help"])), False
        handler = COMMANDS.get(words[0])
        if handler is None:
            raise ops.OpError(f"{words[0][:40]}: command not found; `help` lists the commands")
        output, failed = handler(data, ui, words[1:]), False
    except ops.OpError as exc:
        output, failed = f"{words[0] if words else 'shell'}: {exc}", True
    if len(output) > MAX_OUTPUT:
        output = output[:MAX_OUTPUT] + f"\n[output cut: {len(output) - MAX_OUTPUT} more characters]"
    return output, failed
