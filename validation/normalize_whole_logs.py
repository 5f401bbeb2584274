"""Normalize in Rust gives what normalize in Python gave, on every whole log of the shared
data set (every SWF in traces/, the sacct dumps in slurm/, the PBS log in pbs/), whole and
streamed, with several settings.

Two checks:

* ``python validation/normalize_whole_logs.py``: every call the readers make to
  ``normalize`` runs both the package's (native) rules and the former Python rules
  (tests/normalize_reference.py) on the same raw columns; the two Workloads (every
  column, repairs and skips in order, settings, extra columns) or errors must be equal.
* ``python validation/normalize_whole_logs.py --baseline DIR``: the same reads with the
  package at DIR (a checkout from before the move, with its built extension:
  ``DIR/python``) in a subprocess, compared with this checkout's reads.

The data set is ``../shared/data`` beside the repository, or ``TOPOSCHED_SHARED_DATA``.
Prints one line per log and settings, and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("TOPOSCHED_SHARED_DATA", REPO.parent / "shared" / "data"))

#: Reader options tried on every log (besides the defaults).
OPTIONS: list[dict[str, Any]] = [
    {},
    {"lenient": True},
    {"size_field": "requested", "missing_runtime": "zero", "missing_walltime": 3600},
    {"size_field": "allocated", "cores_per_node": 4, "allow_long_span": True},
]


def logs() -> list[tuple[Path, str]]:
    out = [(p, "swf") for p in sorted((SHARED / "traces").iterdir()) if p.name.endswith((".swf", ".swf.gz"))]
    out += [(p, "sacct") for p in sorted((SHARED / "slurm").glob("*sacct*.log"))]
    out += [(p, "pbs") for p in sorted((SHARED / "pbs").glob("*.log"))]
    return out


def read_all(stream: bool = True) -> dict[str, Any]:
    """Every log read with every option set (and streamed, for SWF): the Workload, or the
    error's text, by key."""
    import numpy as np

    from toposched.errors import ToposchedError
    from toposched.workload import read_trace
    from toposched.workload.swf_stream import SwfStream

    out: dict[str, Any] = {}
    for path, fmt in logs():
        for opts in OPTIONS:
            if fmt != "swf" and "cores_per_node" in opts:
                opts = {k: v for k, v in opts.items() if k != "cores_per_node"}
            key = f"{path.name} {fmt} {opts}"
            try:
                out[key] = read_trace(path, format=fmt, **opts)
            except ToposchedError as e:
                out[key] = f"{type(e).__name__}: {e}"
            if stream and fmt == "swf" and opts in ({}, {"lenient": True}):
                key += " stream"
                try:
                    s = SwfStream(path, chunk_rows=50_000, **opts)
                    chunks = list(s.chunks())
                    out[key] = (
                        {c: np.concatenate([w.columns[c] for w in chunks]) for c in chunks[0].columns} if chunks else {},
                        [(dict(w.repairs), dict(w.skipped), w.settings.get("out_of_range_examples")) for w in chunks],
                        s.settings,
                    )
                except ToposchedError as e:
                    out[key] = f"{type(e).__name__}: {e}"
    return out


def diff(a: Any, b: Any) -> str | None:
    """Where two results differ (None when equal)."""
    import numpy as np

    from toposched.workload.model import Workload

    if type(a) is not type(b):
        return f"{type(a).__name__} vs {type(b).__name__}: {a!r:.300} vs {b!r:.300}"
    if isinstance(a, Workload):
        for attr in ("source", "format", "time_origin_epoch_s", "header", "records", "names"):
            if getattr(a, attr) != getattr(b, attr):
                return attr
        for attr in ("repairs", "skipped", "settings"):
            if list(getattr(a, attr).items()) != list(getattr(b, attr).items()):
                return f"{attr}: {getattr(a, attr)} vs {getattr(b, attr)}"
        return diff(a.columns, b.columns) or diff(a.extra, b.extra)
    if isinstance(a, dict):
        if list(a) != list(b):
            return f"keys {list(a)} vs {list(b)}"
        for k in a:
            d = diff(a[k], b[k])
            if d:
                return f"{k}: {d}"
        return None
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return f"length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            d = diff(x, y)
            if d:
                return f"[{i}]: {d}"
        return None
    if isinstance(a, np.ndarray):
        if a.dtype != b.dtype or a.shape != b.shape or not np.array_equal(a, b):
            return f"array {a.dtype}{a.shape} vs {b.dtype}{b.shape}"
        return None
    return None if a == b else f"{a!r:.300} vs {b!r:.300}"


def check_against_reference() -> int:
    """Both rules on every normalize call the readers make."""
    import copy

    sys.path.insert(0, str(REPO / "tests"))
    import normalize_reference

    from toposched.errors import TraceFormatError
    from toposched.workload import normalize as native_module
    from toposched.workload import pbs, sacct, swf, swf_stream

    native = native_module.normalize
    calls = {"n": 0, "rows": 0, "bad": []}

    def both(raw: Any, **kw: Any) -> Any:
        kw_ref = copy.deepcopy(kw)
        try:
            want: Any = normalize_reference.normalize(raw, **kw_ref)
        except TraceFormatError as e:
            want = e
        try:
            got: Any = native(raw, **kw)
        except TraceFormatError as e:
            got = e
        calls["n"] += 1
        calls["rows"] += len(raw["job_id"])
        if isinstance(want, Exception) or isinstance(got, Exception):
            d = None if (type(got), str(got), getattr(got, "line", None), getattr(got, "field", None)) == (type(want), str(want), getattr(want, "line", None), getattr(want, "field", None)) else f"{got!r} vs {want!r}"
        else:
            d = diff(got, want)
        d = d or diff(kw.get("submit_span"), kw_ref.get("submit_span"))
        if d:
            calls["bad"].append(f"{kw.get('source')}: {d}")
        if isinstance(got, Exception):
            raise got
        return got

    for module in (swf, swf_stream, sacct, pbs):
        module.normalize = both  # type: ignore[attr-defined]
    results = read_all()
    for key, r in results.items():
        print(f"{key}: {r if isinstance(r, str) else 'read'}")
    print(f"{calls['n']} normalize calls on {calls['rows']:,} raw rows; {len(calls['bad'])} differences")
    for b in calls["bad"]:
        print("DIFFERENCE", b)
    return 1 if calls["bad"] else 0


def check_against_baseline(baseline: Path) -> int:
    """This checkout's reads against those of the package at ``baseline``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "before.pickle"
        env = dict(os.environ, PYTHONPATH=str(baseline / "python"))
        subprocess.run([sys.executable, __file__, "--dump", str(out)], env=env, check=True)
        with out.open("rb") as f:
            before = pickle.load(f)
    after = read_all()
    bad = 0
    for key in sorted(set(before) | set(after)):
        d = diff(after.get(key), before.get(key))
        jobs = len(after[key]) if hasattr(after.get(key), "columns") else after.get(key) if isinstance(after.get(key), str) else ""
        print(f"{'DIFFERENT' if d else 'same'}  {key}  {jobs if isinstance(jobs, int) else ''}{'' if not isinstance(jobs, str) else jobs[:120]}" + (f"\n    {d}" if d else ""))
        bad += bool(d)
    print(f"{len(after)} reads, {bad} different")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--baseline", type=Path, help="a checkout from before the move (its python/ holds a built extension)")
    ap.add_argument("--dump", type=Path, help=argparse.SUPPRESS)  # the baseline's side
    args = ap.parse_args()
    if not (SHARED / "traces").is_dir():
        print(f"needs the full data set: {SHARED / 'traces'} not found (set TOPOSCHED_SHARED_DATA=DIR)")
        return 2
    if args.dump:
        with args.dump.open("wb") as f:
            pickle.dump(read_all(), f)
        return 0
    if args.baseline:
        return check_against_baseline(args.baseline)
    return check_against_reference()


if __name__ == "__main__":
    sys.exit(main())
