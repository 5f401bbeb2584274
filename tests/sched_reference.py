"""A second independent reference for the queue policies with interchangeable nodes, written
from docs/semantics.md and not from the Rust code nor tests/reference_easy.py.

Unlike reference_easy (shadow time and extra nodes, as the docs phrase EASY), everything
here is one primitive: the earliest start of a job on a *profile* of the machine (the
running jobs to their expected end, plus any planned windows). EASY is then "the head's
earliest start on the profile, and a later job starts now only if, added to the profile,
the head's earliest start does not move"; conservative is "every queued job holds a window
on the profile". If the documented shadow/extra rules and this definition ever disagree,
the engine and one of the references will too.

Event order (per instant): jobs ending at t release their nodes, jobs submitted at t join
the queue (jobs larger than the machine are skipped), one pass. A job that starts with run
time 0 ends at t and a new round runs at t. Conservative wakes up at reservation starts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

INF = float("inf")


@dataclass
class Outcome:
    start: dict[int, int] = field(default_factory=dict)
    end: dict[int, int] = field(default_factory=dict)
    skipped: list[int] = field(default_factory=list)
    #: conservative: the reservation each job got in its submit pass
    first_reservation: dict[int, int] = field(default_factory=dict)
    #: easy: (instant, head row, shadow time) of every pass that left a head waiting
    shadows: list[tuple[int, int, int]] = field(default_factory=list)


def earliest_fit(windows: list[tuple[float, float, int]], total: int, need: int, dur: int, t: float) -> float:
    """Earliest s >= t with `need` nodes free throughout [s, s + dur), given busy windows
    [begin, end) of some nodes. Busy nodes form a step function changing only at window
    bounds: walk its steps from t, keeping the start of the current run of steps with
    `need` nodes free, until that run lasts `dur`."""
    delta: dict[float, int] = {}
    busy = 0
    for b, e, n in windows:
        if e <= t:
            continue
        if b <= t:
            busy += n
        else:
            delta[b] = delta.get(b, 0) + n
        delta[e] = delta.get(e, 0) - n
    run_from = None
    at = t
    for x in sorted(delta) + [INF]:
        # the step [at, x) has `busy` nodes busy
        if total - busy >= need:
            if run_from is None:
                run_from = at
            if x - run_from >= dur:
                return run_from
        else:
            run_from = None
        if x == INF:
            break
        busy += delta[x]
        at = x
    raise AssertionError("a job no larger than the machine always fits once everything ends")


def replay(
    submit, nodes, walltime, runtime, total: int, policy: str, *, kill: bool = True, compress_first: bool = True, per_event: bool = False, depth: int | None = None, key=None
) -> Outcome:
    """Start times of `policy` ('fcfs', 'easy', 'conservative') on `total` interchangeable
    nodes; rows are in replay order (submit time, ties in file order). `per_event`: pyss's
    order (each submit, then each end in start order, followed by its own pass); `depth`:
    --queue-depth (fcfs/easy: a pass looks at the first `depth` queued jobs); `key(row, now)`:
    --queue-order (the queue sorted by it before every pass, ties in submit order)."""
    n = len(submit)
    out = Outcome()
    order = sorted(range(n), key=lambda r: (submit[r], r))
    nxt = 0
    queue: list[int] = []
    running: dict[int, tuple[int, int]] = {}  # row -> (actual end, expected end)
    seq: dict[int, int] = {}  # row -> order of its start
    res: dict[int, int] = {}  # conservative reservations: row -> start

    def run_time(r: int) -> int:
        return min(runtime[r], walltime[r]) if kill else runtime[r]

    def begin(r: int, t: int) -> None:
        out.start[r] = t
        out.end[r] = t + run_time(r)
        seq[r] = len(seq)
        running[r] = (t + run_time(r), t + walltime[r])

    def used() -> int:
        return sum(nodes[r] for r in running)

    def running_windows(t: int) -> list[tuple[float, float, int]]:
        # a job past its limit (--run-on) is expected to end now
        return [(-INF, max(exp, t), nodes[r]) for r, (_, exp) in running.items()]

    def one_pass(t: int, new: list[int], ended: list[int]) -> None:
        if key is not None:
            queue.sort(key=lambda r: (key(r, t), submit[r], r))
            new = sorted(new, key=queue.index)
        if policy in ("fcfs", "easy"):
            window = queue[:depth] if depth is not None else list(queue)
            while window and nodes[window[0]] <= total - used():
                begin(window[0], t)
                queue.remove(window.pop(0))
            if policy == "easy" and window:
                head, rest = window[0], window[1:]
                plan = running_windows(t)
                shadow = earliest_fit(plan, total, nodes[head], walltime[head], t)
                out.shadows.append((t, head, int(shadow)))
                for r in rest:
                    if nodes[r] > total - used():
                        continue
                    trial = plan + [(t, t + walltime[r], nodes[r])]
                    if earliest_fit(trial, total, nodes[head], walltime[head], t) <= shadow:
                        begin(r, t)
                        queue.remove(r)
                        plan = trial
        elif policy == "conservative":

            def others(q: int) -> list[tuple[float, float, int]]:
                return running_windows(t) + [(s, s + walltime[p], nodes[p]) for p, s in res.items() if p != q]

            def reserve_new() -> None:
                for q in new:
                    res[q] = int(earliest_fit(others(q), total, nodes[q], walltime[q], t))
                    out.first_reservation[q] = res[q]

            def compress() -> None:
                if ended:
                    for q in sorted(res, key=lambda q: (res[q], queue.index(q))):
                        if q in new and not compress_first:
                            continue
                        s = earliest_fit(others(q), total, nodes[q], walltime[q], t)
                        if s < res[q]:
                            res[q] = int(s)

            if compress_first:
                compress()
                reserve_new()
            else:
                reserve_new()
                compress()
            due = sorted((q for q in queue if res[q] <= t), key=lambda q: (res[q], queue.index(q)))
            for q in due:
                if nodes[q] > total - used():
                    # per event only: a job ending now, not yet released, counted as free
                    assert per_event, "a due reservation without free nodes"
                    continue
                begin(q, t)
                del res[q]
                queue.remove(q)
        else:
            raise ValueError(policy)

    while nxt < n or running or queue:
        t = min(
            min((a for a, _ in running.values()), default=INF),
            submit[order[nxt]] if nxt < n else INF,
            min(res.values(), default=INF),
        )
        assert t < INF, "stuck: queued jobs, nothing running, nothing to come"
        if not per_event:
            ended = [r for r, (a, _) in running.items() if a == t]
            for r in ended:
                del running[r]
            new = []
            while nxt < n and submit[order[nxt]] == t:
                r = order[nxt]
                nxt += 1
                if nodes[r] > total:
                    out.skipped.append(r)
                else:
                    queue.append(r)
                    new.append(r)
            one_pass(t, new, ended)
            continue
        events = 0
        while nxt < n and submit[order[nxt]] == t:
            r = order[nxt]
            nxt += 1
            events += 1
            if nodes[r] > total:
                out.skipped.append(r)
                one_pass(t, [], [])
            else:
                queue.append(r)
                one_pass(t, [r], [])
        while True:
            due_end = sorted((seq[r], r) for r, (a, _) in running.items() if a == t)
            if not due_end:
                break
            del running[due_end[0][1]]
            events += 1
            one_pass(t, [], [due_end[0][1]])
        if events == 0:
            one_pass(t, [], [])
    return out


def fcfs_with_switches(submit, nodes, walltime, runtime, leaf_of: list[int], max_leaves: int, wait_s: int) -> dict[int, int]:
    """FCFS with `linear` placement (lowest free ids) and Slurm's --switches=N@WAIT
    (docs/semantics.md): a selection spanning more than N leaves is refused until the job
    has waited WAIT since it was first refused; the engine wakes up when the wait runs out.
    Jobs killed at their limit. Rows in replay order."""
    n_nodes, n = len(leaf_of), len(submit)
    start: dict[int, int] = {}
    free = set(range(n_nodes))
    running: dict[int, tuple[int, list[int]]] = {}
    queue: list[int] = []
    refused: dict[int, int] = {}
    wake: set[int] = set()
    nxt = 0
    while nxt < n or running or queue:
        t = min([e for e, _ in running.values()] + ([submit[nxt]] if nxt < n else []) + list(wake))
        wake = {w for w in wake if w > t}
        for r in [r for r, (e, _) in running.items() if e == t]:
            free |= set(running.pop(r)[1])
        while nxt < n and submit[nxt] == t:
            if nodes[nxt] <= n_nodes:
                queue.append(nxt)
            nxt += 1
        while queue and nodes[queue[0]] <= len(free):
            head = queue[0]
            chosen = sorted(free)[: nodes[head]]
            if len({leaf_of[i] for i in chosen}) > max_leaves:
                since = refused.setdefault(head, t)
                if t < since + wait_s:
                    wake.add(since + wait_s)
                    break
            start[head] = t
            free -= set(chosen)
            running[head] = (t + min(runtime[head], walltime[head]), chosen)
            queue.pop(0)
    return start
