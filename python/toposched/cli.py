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
marked incomplete); a stdout closed by its reader (``| head -1``) ends quietly with 141. No traceback reaches the terminal unless ``--debug`` is given.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import zlib
from pathlib import Path
from types import ModuleType
from typing import NoReturn

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


class _Parser(argparse.ArgumentParser):
    """argparse's parser with a usage error on one line (docs/reliability.md): argparse
    prints the whole usage first, some 60 lines for simulate's options, above the one line
    that says what is wrong. Subcommand parsers are of this class too (add_subparsers
    takes the parent's)."""

    #: The words of the command line being parsed (set by main): where error() looks for
    #: an option this parser does not know.
    words: list[str] = []

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message}{self._unknown_option(message)} ('{self.prog} --help' lists the options)\n")

    def _unknown_option(self, message: str) -> str:
        """The first option on the command line this parser does not know, and the one
        probably meant: argparse reports a misspelt required flag (--sytem) as the real
        one missing, and names no flag for a foreign one (sweep --jobs)."""
        if not message.startswith(("unrecognized arguments", "the following arguments are required")):
            return ""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        for word in _Parser.words:
            if word == "--":
                break
            flag = word.split("=", 1)[0]
            if not flag.startswith("--") or any(k.startswith(flag) for k in known):  # known, or an abbreviation
                continue
            alias = _FLAG_ALIASES.get(flag)
            import difflib  # only on this error path: the command line stays quick to start

            close = difflib.get_close_matches(flag, known, n=1, cutoff=0.75)
            meant = alias if alias in known else close[0] if close else None
            if meant is None and message.startswith("unrecognized arguments"):
                return ""  # argparse's line names the flag already, and nothing is nearer
            return f"; {flag} is not an option of {self.prog}" + (f": did you mean {meant}?" if meant else "")
        return ""


#: Flags a newcomer types for one of ours (other tools' names, or another command's).
_FLAG_ALIASES = {
    "--jobs": "--workers", "--workers": "--jobs", "--output": "--out", "--outdir": "--out", "--output-dir": "--out",
    "--log": "--trace", "--workload": "--trace", "--allocation": "--alloc", "--allocator": "--alloc", "--policy": "--alloc",
    "--fabric": "--system", "--topology": "--system",
}  # fmt: skip


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The ``toposched`` parser: every subcommand, or only the module ``only``."""
    p = _Parser(
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
#: 128 + SIGPIPE: what a shell shows for a tool that a closed pipe ended.
EXIT_BROKEN_PIPE = 141


def _stdout_gone() -> bool:
    """Whether standard output is a pipe whose reader has closed it (poll: POLLERR)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(ev & (select.POLLERR | select.POLLHUP) for _, ev in poller.poll(0))
    except (OSError, ValueError, AttributeError):  # no real file descriptor (a test's capture)
        return False


def _stdout_is_devnull() -> bool:
    """Whether standard output is /dev/null (where rich points it at a broken pipe)."""
    try:
        out, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError, AttributeError):
        return False
    return (out.st_dev, out.st_ino, out.st_rdev) == (null.st_dev, null.st_ino, null.st_rdev)


def main(argv: list[str] | None = None) -> int:
    raw = sys.argv[1:] if argv is None else list(argv)
    debug = "--debug" in raw
    if debug:
        os.environ["TOPOSCHED_DEBUG"] = "1"  # the engine then prints its panics as well
    if not raw:  # a newcomer typing the bare command gets the commands, not an error line
        build_parser().print_help(sys.stderr)
        return EXIT_INPUT
    _Parser.words = raw
    try:
        parser = build_parser(_requested_command(raw))
        args, extra = parser.parse_known_args(raw)
        if extra:
            # the command's own parser says it, so the hint is 'toposched systems --help'
            # (argparse's top level said 'toposched: error: unrecognized arguments: ...
            # ('toposched --help' lists the options)', a list of the commands)
            sub = next((a.choices.get(args.command) for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
            (sub or parser).error(f"unrecognized arguments: {' '.join(extra)}")
        return int(args._run(args))
    except KeyboardInterrupt:
        if debug:
            raise
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except SystemExit as exc:
        # rich's consoles meet a closed stdout with SystemExit(1) (Console.on_broken_pipe,
        # after pointing stdout at /dev/null): the same event as the BrokenPipeError below
        if exc.code == 1 and _stdout_is_devnull():
            return EXIT_BROKEN_PIPE
        raise
    except Exception as exc:  # noqa: BLE001 - the one place every error becomes one line
        if isinstance(exc, BrokenPipeError) and _stdout_gone():
            # The reader of our output left (`toposched systems | head -1`): what was asked
            # is done (a replay writes its results before printing them), so end quietly,
            # as Unix tools do, with SIGPIPE's status; stdout goes to /dev/null so that the
            # interpreter's flush at exit does not fail again. (Another broken pipe, a
            # socket's, is an error like any other.)
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return EXIT_BROKEN_PIPE
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
    if isinstance(exc, FileExistsError) and exc.filename and os.path.exists(exc.filename) and not os.path.isdir(exc.filename):
        # mkdir(exist_ok=True) of an --out that is a file says only "File exists"
        return EXIT_INPUT, f"{exc.filename}: is a file, not a directory; give a directory that is new or the command's own"
    if isinstance(exc, NotADirectoryError) and exc.filename:
        # "out/x: Not a directory": name the file in the way, not the path under it
        file_above = next((p for p in Path(exc.filename).parents if p.exists() and not p.is_dir()), None)
        if file_above is not None:
            return EXIT_INPUT, f"{file_above}: is a file, not a directory (in the way of {exc.filename})"
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
    process (tests, notebooks), leaves the collector alone.

    NumPy's OpenBLAS is kept to one thread unless the environment says otherwise: no
    command does linear algebra, and at NumPy's import OpenBLAS starts a thread per core
    that spins waiting for work (60 ms of CPU at every start here, taken from the threads
    that read and write; in a sweep's workers, one per core in every worker)."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    status = main()
    import gc

    gc.freeze()
    sys.exit(status)


if __name__ == "__main__":
    console_main()
