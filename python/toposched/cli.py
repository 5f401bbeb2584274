"""The ``toposched`` command line.

    toposched simulate --trace LOG --system FABRIC [--queue easy] [--alloc isolated] --out DIR
    toposched systems
    toposched check DIR [--interference-free]

Each subcommand is a module of :mod:`toposched.commands`. This module is the one error
boundary of every command (docs/reliability.md): an error in an input or a setting prints
``error: WHERE: WHAT`` (file, line, field, and the flag that changes it) and exits with
status 2, as argparse does for usage errors (a policy written in Python that fails or
answers wrongly is input too); a run that fails otherwise (a bug caught in the engine,
the machine: memory, disk) prints ``error: ...`` and exits with 1;
Ctrl-C anywhere exits with 130 (an interrupted replay first writes what it finished,
marked incomplete). No traceback reaches the terminal unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import zlib
from types import ModuleType

from . import __version__, commands
from .errors import SimulationError, ToposchedError


def _command_names() -> list[str]:
    """Module names of every subcommand (``node_agent`` is ``toposched node-agent``)."""
    return sorted(m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_"))


def _command_modules(only: str | None = None) -> list[ModuleType]:
    names = _command_names() if only is None else [only]
    return [importlib.import_module(f"{commands.__name__}.{n}") for n in names]


def _requested_command(raw: list[str]) -> str | None:
    """The module of the subcommand named on the command line, if it names one.

    Only that module is imported to parse and run it: importing every command (and what
    each imports) cost more than a whole small replay. Anything else (``--help``,
    ``--version``, no command, a misspelled one) builds the full parser, so the help and
    argparse's "invalid choice" message still list every command.
    """
    for word in raw:
        if word == "--":
            return None
        if word.startswith("-"):
            if word == "--debug":
                continue
            return None  # -h, --version or an unknown option: the full parser answers
        module = word.replace("-", "_")
        return module if not module.startswith("_") and module in _command_names() else None
    return None


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``toposched`` parser: every subcommand, or only the module ``only``."""
    p = argparse.ArgumentParser(
        prog="toposched",
        description="Topology-aware HPC scheduling simulator: replay real job logs on fat-tree fabrics.",
    )
    p.add_argument("--version", action="version", version=f"toposched {__version__}")
    _add_debug(p, False)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for mod in _command_modules(only):
        sp = sub.add_parser(
            mod.NAME,
            help=mod.HELP,
            description=mod.DESCRIPTION,
            epilog=getattr(mod, "EPILOG", None),
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        mod.add_arguments(sp)
        _add_debug(sp, argparse.SUPPRESS)
        sp.set_defaults(_run=mod.run)
    return p


def _add_debug(p: argparse.ArgumentParser, default: object) -> None:
    p.add_argument("--debug", action="store_true", default=default, help="show the traceback of an error (for bug reports)")


#: Exit statuses (docs/reliability.md).
EXIT_INPUT = 2
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in raw
    if debug:
        os.environ["TOPOSCHED_DEBUG"] = "1"  # the engine then prints its panics as well
    try:
        args = build_parser(_requested_command(raw)).parse_args(raw)
        return int(args._run(args))
    except KeyboardInterrupt:
        if debug:
            raise
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as exc:  # noqa: BLE001 - the one place every error becomes one line
        if debug:
            raise
        status, message = describe_error(exc)
        print(f"error: {message}", file=sys.stderr)
        return status


def describe_error(exc: BaseException) -> tuple[int, str]:
    """Exit status and one line for an error that ended a command."""
    if isinstance(exc, SimulationError) and str(exc).startswith("internal error"):
        return EXIT_FAILURE, str(exc)  # a panic caught at the binding: a bug, not the input
    if isinstance(exc, ToposchedError):
        # bad input, including a policy written in Python that answers wrongly
        return EXIT_INPUT, str(exc)
    if isinstance(exc, MemoryError):
        return EXIT_FAILURE, "out of memory; try a smaller workload (transforms, --queue-depth) or a machine with more memory"
    if isinstance(exc, (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError, FileExistsError)):
        where = f"{exc.filename}: " if exc.filename else ""
        return EXIT_INPUT, f"{where}{exc.strerror or exc}"
    if isinstance(exc, OSError):
        where = f"{exc.filename}: " if exc.filename else ""
        return EXIT_FAILURE, f"{where}{exc.strerror or exc}"
    if type(exc).__module__.startswith("pyarrow") or isinstance(exc, (EOFError, zlib.error)):
        return EXIT_INPUT, f"unreadable file: {exc}"
    return EXIT_FAILURE, f"internal error: {type(exc).__name__}: {exc} (a bug in toposched: rerun with --debug and report the traceback)"


def console_main() -> None:
    """The ``toposched`` program (the console script and ``python -m toposched.cli``):
    :func:`main`, then exit. Before exiting, every object is frozen out of the garbage
    collector's reach (``gc.freeze``): the interpreter's last collections would otherwise
    walk every module and array the process is about to drop (30-40 ms of a 0.6 s
    replay). Only here, where the process ends: ``main`` itself, called in a longer-lived
    process (tests, notebooks), leaves the collector alone."""
    status = main()
    import gc

    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    console_main()
