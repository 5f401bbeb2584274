"""The ``toposched`` command line.

    toposched simulate --trace LOG --system FABRIC [--queue easy] [--alloc isolated] --out DIR
    toposched systems
    toposched check DIR [--interference-free]

Each subcommand is a module of :mod:`toposched.commands`. Every error in an input file is
reported as ``error: FILE:LINE: field 'F': what`` and exits with status 2; an interrupted
replay (Ctrl-C) writes what it finished, marked incomplete, and exits with status 130.
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
from types import ModuleType

from . import __version__, commands
from .errors import ToposchedError


def _command_modules() -> list[ModuleType]:
    names = sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))
    return [importlib.import_module(f"{commands.__name__}.{n}") for n in names]


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="toposched",
        description="Topology-aware HPC scheduling simulator: replay real job logs on fat-tree fabrics.",
    )
    p.add_argument("--version", action="version", version=f"toposched {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in _command_modules():
        sp = sub.add_parser(
            mod.NAME,
            help=mod.HELP,
            description=mod.DESCRIPTION,
            epilog=getattr(mod, "EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(sp)
        sp.set_defaults(_run=mod.run)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args._run(args))
    except ToposchedError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except FileNotFoundError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
