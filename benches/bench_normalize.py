"""normalize()'s own time on whole logs, in-process: the raw columns the SWF reader hands
to it are captured once, then normalize is timed on them alone (best of --repeat).

    python benches/bench_normalize.py [--repeat 20] [--trace-dir DIR] [LOG ...]

Run it with another checkout's package on PYTHONPATH to time that one's normalize (the
same script works before and after the rules moved to Rust). Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
DEFAULT_LOGS = ["HPC2N-2002-2.2-cln.swf.gz", "CEA-Curie-2011-2.1-cln.swf.gz"]


def captured_call(path: Path) -> tuple[Any, dict[str, Any]]:
    """The (raw, keyword arguments) of the one normalize call read_swf makes on ``path``."""
    from toposched.workload import swf

    got: list[tuple[Any, dict[str, Any]]] = []
    real = swf.normalize

    def capture(raw: Any, **kw: Any) -> Any:
        got.append((raw, kw))
        return real(raw, **kw)

    swf.normalize = capture  # type: ignore[assignment]
    try:
        swf.read_swf(path)
    finally:
        swf.normalize = real
    (call,) = got
    return call


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="*", default=DEFAULT_LOGS)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--trace-dir", type=Path, default=Path(os.environ.get("TOPOSCHED_SHARED_DATA", HERE.parent.parent / "shared" / "data")) / "traces")
    args = ap.parse_args()
    import toposched.workload.normalize as module

    out: dict[str, Any] = {"normalize": module.__file__, "machine": platform.machine(), "load_avg": os.getloadavg(), "logs": {}}
    for name in args.logs:
        raw, kw = captured_call(args.trace_dir / name)
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            w = module.normalize(raw, **kw)
            times.append(time.perf_counter() - t0)
        out["logs"][name] = {"rows": len(raw["job_id"]), "jobs": len(w), "best_s": round(min(times), 5), "median_s": round(sorted(times)[len(times) // 2], 5)}
    out["load_avg_after"] = os.getloadavg()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
