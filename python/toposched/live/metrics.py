"""Prometheus text exposition (format 0.0.4) for ``toposched serve``: counters, a latency
histogram and gauges, kept by hand (a few dozen lines; no client library needed)."""

from __future__ import annotations

import threading
from bisect import bisect_left
from collections import defaultdict

# Latency buckets in seconds (upper bounds).
BUCKETS_S = (0.0005, 0.001, 0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0)


def _labels(pairs: tuple[tuple[str, str], ...]) -> str:
    if not pairs:
        return ""
    esc = (v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for _, v in pairs)
    return "{" + ",".join(f'{k}="{v}"' for (k, _), v in zip(pairs, esc)) + "}"


class Metrics:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.requests: dict[tuple[tuple[str, str], ...], int] = defaultdict(int)
        self.decisions: dict[tuple[tuple[str, str], ...], int] = defaultdict(int)
        self.latency_counts: dict[str, list[int]] = defaultdict(lambda: [0] * (len(BUCKETS_S) + 1))
        self.latency_sum: dict[str, float] = defaultdict(float)

    def observe(self, method: str, route: str, code: int, seconds: float) -> None:
        with self._lock:
            self.requests[(("method", method), ("route", route), ("code", str(code)))] += 1
            self.latency_counts[route][bisect_left(BUCKETS_S, seconds)] += 1
            self.latency_sum[route] += seconds

    def decision(self, outcome: str) -> None:
        with self._lock:
            self.decisions[(("outcome", outcome),)] += 1

    def render(self, gauges: dict[str, tuple[str, float]]) -> str:
        out = []
        with self._lock:
            out += ["# HELP toposched_requests_total HTTP requests answered.", "# TYPE toposched_requests_total counter"]
            out += [f"toposched_requests_total{_labels(k)} {v}" for k, v in sorted(self.requests.items())]
            out += [
                "# HELP toposched_decisions_total Allocation decisions by outcome (placed, reserved, refused, never, released).",
                "# TYPE toposched_decisions_total counter",
            ]
            out += [f"toposched_decisions_total{_labels(k)} {v}" for k, v in sorted(self.decisions.items())]
            out += [
                "# HELP toposched_request_duration_seconds Time from request read to answer written.",
                "# TYPE toposched_request_duration_seconds histogram",
            ]
            for route in sorted(self.latency_counts):
                counts = self.latency_counts[route]
                acc = 0
                for ub, c in zip(BUCKETS_S, counts):
                    acc += c
                    out.append(f'toposched_request_duration_seconds_bucket{{route="{route}",le="{ub}"}} {acc}')
                acc += counts[-1]
                out.append(f'toposched_request_duration_seconds_bucket{{route="{route}",le="+Inf"}} {acc}')
                out.append(f'toposched_request_duration_seconds_sum{{route="{route}"}} {self.latency_sum[route]:.6f}')
                out.append(f'toposched_request_duration_seconds_count{{route="{route}"}} {acc}')
        for name, (help_text, value) in sorted(gauges.items()):
            out += [f"# HELP {name} {help_text}", f"# TYPE {name} gauge", f"{name} {value:g}"]
        return "\n".join(out) + "\n"
