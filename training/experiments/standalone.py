"""The command line of an experiment that does not fit the harness (training/aet.py, training/ideacritic.py): it
makes its own data and arms, and prints its own tables.

    python -m training.NAME --smoke          # tiny model, few seeds, one training seed (in the suite)
    python -m training.NAME --base base-small [--out DIR] [--no-readme]

The full run writes its tables into training/README.md between the NAME markers (report.write_readme_section).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

README = Path(__file__).resolve().parents[1] / "README.md"


def standalone_main(
    argv: list[str] | None,
    *,
    name: str,
    description: str,
    run: Callable[[str, Path, Any], dict[str, Any]],
    tables: Callable[[dict[str, Any]], str],
    smoke: Any,
    full: Any,
) -> int:
    """Parse the arguments, resolve the start checkpoint, run(base, out, settings), print tables(result), and write
    them into the README after a full run unless --no-readme."""
    parser = argparse.ArgumentParser(prog=f"python -m training.{name}", description=description)
    parser.add_argument("--smoke", action="store_true", help="tiny model, few seeds, one training seed")
    parser.add_argument("--base", default="", help="start checkpoint: a zoo spec name or a folder (default smol-base; smoke: tiny)")
    parser.add_argument("--out", default="", help=f"output folder (default var/experiments/{name}[-smoke])")
    parser.add_argument("--no-readme", action="store_true", help="print the tables without writing training/README.md")
    args = parser.parse_args(argv)
    from training.experiments import DEFAULT_BASE
    from training.zoo import resolve
    from training.zoo.build import var_root

    if args.smoke:
        from training.tiny import tiny_model_path

        base = args.base or str(tiny_model_path())
    else:
        base = str(resolve(args.base or DEFAULT_BASE))
    out = Path(args.out) if args.out else var_root() / "experiments" / (f"{name}-smoke" if args.smoke else name)
    text = tables(run(base, out, smoke if args.smoke else full))
    print(text)
    if not args.smoke and not args.no_readme:
        from training.experiments.report import write_readme_section

        write_readme_section(README, name, text)
    return 0
