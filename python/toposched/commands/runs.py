"""`toposched runs`: list and filter the runs of a sweep directory (its DuckDB catalog)."""

from __future__ import annotations

import argparse
import csv
import json
import math
import sys
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

NAME = "runs"
HELP = "list and filter the runs of a sweep directory (its DuckDB catalog)"
DESCRIPTION = "List the runs of a sweep directory (or of a compare or frontier output directory) from its catalog (DIR/catalog.duckdb), filtered with SQL."

EPILOG = """\
examples:
  toposched runs out/small
  toposched runs out/small --where "alloc = 'isolated' AND status = 'complete'"
  toposched runs out/small --columns queue,alloc,taper,wait_mean_s,utilization --format csv
  toposched runs out/small --sql "SELECT alloc, taper, avg(wait_mean_s) FROM runs GROUP BY ALL ORDER BY ALL"
  toposched runs out/small --columns '*' --format json

--where, --columns and --order-by take DuckDB SQL (the columns are listed in docs/sweeps.md:
run_id, status, error, workload, transforms, t_scale, t_days, ..., fabric, system, taper,
queue, alloc, speedup, seed, wait_mean_s, bsld_mean, utilization, aph_mean, makespan_s, ...).
The catalog also has the views jobs (every job of every complete run, with run_id) and
utilization. The catalog is rebuilt from the run directories when it does not list them all
(unless a sweep is running on DIR) or with --rebuild.
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", metavar="DIR", help="a sweep directory (toposched sweep --out DIR), or a compare or frontier output directory")
    parser.add_argument("--where", metavar="SQL", help="keep the runs for which this SQL condition holds, e.g. \"alloc='isolated'\"")
    parser.add_argument("--columns", metavar="COLS", help="comma-separated columns or SQL expressions to show ('*' for all)")
    parser.add_argument("--order-by", metavar="SQL", help="sort order (default: the sweep's matrix order)")
    parser.add_argument("--limit", type=_count, metavar="N", help="show at most N runs")
    parser.add_argument("--sql", metavar="QUERY", help="run this query on the catalog instead (tables: runs; views: jobs, utilization)")
    parser.add_argument("--format", choices=("table", "csv", "json"), default="table", help="output format (default: table)")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the catalog from the run directories first")


def _count(text: str) -> int:
    """``--limit``: a whole number >= 0 (DuckDB refuses a negative LIMIT in three lines)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be at least 0, got {v}")
    if v >= 2**63:  # else "SQL error: Conversion Error: Type INT128 ... out of range for ... INT64"
        raise argparse.ArgumentTypeError(f"must be below 2^63, got {v}")
    return v


def _one_line(message: str) -> str:
    """DuckDB's message on one line: its lines joined, less the echo of the query and the
    caret under it (the query is the user's own --where/--columns/--order-by/--sql)."""
    kept = [ln.strip() for ln in message.splitlines() if ln.strip() and not ln.lstrip().startswith("LINE ") and set(ln.strip()) != {"^"}]
    return " ".join(kept)


def _split_columns(text: str) -> list[str]:
    """Split on commas outside parentheses and quotes."""
    out: list[str] = []
    cur: list[str] = []
    depth, quote = 0, None
    for ch in text:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
            continue
        if ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _csv_cell(v: Any) -> Any:
    """A CSV field: a nested value (a DuckDB STRUCT, LIST or MAP: the policy options, say)
    as JSON, which a spreadsheet or a script can read back; it was Python's repr
    (``{'leaf_cap': 2}``, ``True``, ``None``)."""
    v = _plain(v, json_safe=False)
    if isinstance(v, (dict, list, tuple)):
        return json.dumps(_json_ready(v), default=str)
    return v


def _json_ready(v: Any) -> Any:
    """``v`` with its nested values made plain (:func:`_plain`) for ``json.dumps``."""
    if isinstance(v, dict):
        return {str(k): _json_ready(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_json_ready(x) for x in v]
    return _plain(v)


def _plain(v: Any, *, json_safe: bool = True) -> Any:
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    if isinstance(v, Decimal):
        # DuckDB's DECIMAL (a literal 1.5, a ::DECIMAL cast): json wrote it as the string "1.5"
        v = float(v)
    if isinstance(v, float) and (v != v or (json_safe and not math.isfinite(v))):
        return None  # NaN, and for JSON ±inf, which json wrote as Infinity: not JSON
    return v


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, float):
        # four significant digits, but never an exponent: a mean wait of 107,739 s is
        # '107739', not '1.077e+05'
        if v != 0 and (abs(v) >= 1e4 or abs(v) < 1e-4):
            if abs(v) >= 1e4 or not math.isfinite(v):
                return f"{v:.0f}"
            return f"{v:.{3 - math.floor(math.log10(abs(v)))}f}"
        return f"{v:.4g}"
    if isinstance(v, (datetime, date)):
        return v.isoformat()
    return str(v)


def run(args: argparse.Namespace) -> int:
    import duckdb

    from ..errors import ToposchedError
    from ..sweep.catalog import left_out, query, query_runs, unlisted

    for flag, value in (("--sql", args.sql), ("--where", args.where), ("--columns", args.columns), ("--order-by", args.order_by)):
        if value is not None and not value.strip():
            # an empty --sql listed the runs instead, as if it had not been given
            raise ToposchedError(f"{flag}: empty; give an SQL {'query' if flag == '--sql' else 'expression'} or leave {flag} out")
    try:
        if args.sql is not None:
            names, rows = query(args.dir, args.sql, rebuild=args.rebuild)
        else:
            cols = _split_columns(args.columns) if args.columns else None
            names, rows = query_runs(args.dir, where=args.where, columns=cols, order_by=args.order_by, limit=args.limit, rebuild=args.rebuild)
    except duckdb.Error as exc:
        raise ToposchedError(f"{args.dir}: SQL error: {_one_line(str(exc))}") from None
    for run_dir, why in left_out(args.dir):
        # a damaged run would otherwise drop out of the listing unseen
        print(f"toposched runs: {Path(args.dir) / run_dir} is left out: {why}", file=sys.stderr)
    missing = unlisted(args.dir)
    if missing:
        # while a sweep runs, its driver alone writes the catalog: the listing said "0 runs"
        # with runs finished on disk, and --rebuild did nothing, both without a word
        print(
            f"toposched runs: the catalog does not list {missing} finished run{'s' if missing != 1 else ''} yet: a sweep, compare or "
            f"frontier is working on {args.dir} (it writes the catalog every 30 s and at its end), or {args.dir} cannot be written",
            file=sys.stderr,
        )
    # piped into head: the CLI's boundary ends quietly with 141, as for every command
    _print(args, names, rows)
    return 0


def _print(args: argparse.Namespace, names: list[str], rows: list[tuple[Any, ...]]) -> None:
    if args.format == "csv":
        w = csv.writer(sys.stdout, lineterminator="\n")
        w.writerow(names)
        for r in rows:
            w.writerow(["" if v is None else _csv_cell(v) for v in r])
    elif args.format == "json":
        json.dump([{n: _plain(v) for n, v in zip(names, r)} for r in rows], sys.stdout, indent=1, default=str)
        sys.stdout.write("\n")
    else:
        from rich.console import Console
        from rich.table import Table
        from rich.text import Text

        t = Table(show_lines=False, header_style="bold")
        for i, n in enumerate(names):
            numeric = any(isinstance(r[i], (int, float)) and not isinstance(r[i], bool) for r in rows)
            t.add_column(n, justify="right" if numeric else "left", overflow="fold", no_wrap=n == "run_id")
        for r in rows:
            t.add_row(*(Text(_cell(v)) for v in r))
        # Into a pipe or a file: the table at its natural width, never folded.
        console = Console(highlight=False, width=None if sys.stdout.isatty() else 100_000)
        console.print(t)
        console.print(f"{len(rows)} run{'s' if len(rows) != 1 else ''}" if not args.sql else f"{len(rows)} row{'s' if len(rows) != 1 else ''}")
