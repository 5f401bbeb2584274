"""An independent, deliberately plain implementation of classic EASY backfilling (and
FCFS) with interchangeable nodes, written from the rules in docs/semantics.md and not from
the Rust code. Used to compare start times job by job with the engine.

Rules: at each instant, ends (freeing nodes), then submits, then one pass. Pass: start
queued jobs in order while they fit; the first that does not fit is the head; its shadow
time is the expected end (start + requested time) of the running job at which enough
nodes become free (running jobs ordered by expected end, then row); extra = every node
free at the shadow time (jobs ending at that same instant included) beyond the head's need. Later jobs that fit start if they end by the
shadow time, or else if they need no more than the extra nodes (which they use up).
"""

from __future__ import annotations

import heapq


def reference_schedule(submit, nodes, walltime, runtime, total_nodes, *, backfill=True):
    n = len(submit)
    start = [-1] * n
    ends = []  # heap of (end, row)
    running = {}  # row -> expected end
    free = total_nodes
    queue = []
    nxt = 0
    while nxt < n or ends:
        t = min(ends[0][0] if ends else float("inf"), submit[nxt] if nxt < n else float("inf"))
        while ends and ends[0][0] == t:
            _, r = heapq.heappop(ends)
            free += nodes[r]
            del running[r]
        while nxt < n and submit[nxt] == t:
            if nodes[nxt] <= total_nodes:
                queue.append(nxt)
            nxt += 1

        def begin(r):
            nonlocal free
            start[r] = t
            free -= nodes[r]
            running[r] = t + walltime[r]
            heapq.heappush(ends, (t + min(runtime[r], walltime[r]), r))

        k = 0
        while k < len(queue) and nodes[queue[k]] <= free:
            begin(queue[k])
            k += 1
        started = set(queue[:k])
        if backfill and k < len(queue):
            head = queue[k]
            avail, shadow = free, t
            expected = sorted((max(e, t), r) for r, e in running.items())
            for exp_end, r in expected:
                if avail >= nodes[head]:
                    break
                avail += nodes[r]
                shadow = exp_end
            # classic EASY: every node free at the shadow time counts, so jobs expected to
            # end at that very instant add to the extra nodes too
            avail = free + sum(nodes[r] for e, r in expected if e <= shadow)
            extra = avail - nodes[head]
            for r in queue[k + 1 :]:
                if free == 0:
                    break
                if nodes[r] > free:
                    continue
                if t + walltime[r] <= shadow:
                    begin(r)
                    started.add(r)
                elif nodes[r] <= extra:
                    begin(r)
                    started.add(r)
                    extra -= nodes[r]
        queue = [r for r in queue if r not in started]
    return start


def reference_conservative(submit, nodes, walltime, runtime, total_nodes):
    """Plain conservative backfilling with interchangeable nodes (docs/semantics.md):
    every queued job holds a reservation made at its submit pass (earliest start where it
    fits for its whole requested time beside the running jobs and earlier reservations);
    after any end, reservations are re-made in order of start, each only moving earlier;
    jobs start at their reservation."""
    n = len(submit)
    start = [-1] * n
    ends = []  # (actual end, row)
    running = {}  # row -> expected end
    res = {}  # row -> reserved start
    queue = []
    free = total_nodes
    nxt = 0

    def fits_at(row, s, t):
        # free nodes at every instant of [s, s + walltime) beside running jobs and other reservations
        points = {s} | {e for e in running.values() if s < e < s + walltime[row]}
        points |= {r for q, r in res.items() if q != row and s < r < s + walltime[row]}
        points |= {r + walltime[q] for q, r in res.items() if q != row and s < r + walltime[q] < s + walltime[row]}
        for p in points:
            busy = sum(nodes[r] for r, e in running.items() if max(e, t + 1) > p)
            busy += sum(nodes[q] for q, r in res.items() if q != row and r <= p < r + walltime[q])
            if total_nodes - busy < nodes[row]:
                return False
        return True

    def earliest(row, t, limit):
        cands = {t} | {max(e, t + 1) for e in running.values()} | {r + walltime[q] for q, r in res.items() if q != row}
        for s in sorted(c for c in cands if t <= c <= limit):
            if fits_at(row, s, t):
                return s
        return None

    while nxt < n or ends:
        inf = float("inf")
        # next end, next submit, or next reservation start (the engine wakes up for those)
        t = min(ends[0][0] if ends else inf, submit[nxt] if nxt < n else inf, min(res.values(), default=inf))
        ended = False
        while ends and ends[0][0] == t:
            _, r = heapq.heappop(ends)
            free += nodes[r]
            del running[r]
            ended = True
        while nxt < n and submit[nxt] == t:
            if nodes[nxt] <= total_nodes:
                queue.append(nxt)
            nxt += 1
        if ended:
            for q in sorted(res, key=lambda q: (res[q], queue.index(q))):
                if res[q] > t:
                    better = earliest(q, t, res[q] - 1)
                    if better is not None:
                        res[q] = better
        for q in queue:
            if q not in res:
                res[q] = earliest(q, t, float("inf"))
        for q in sorted([q for q in queue if res[q] <= t], key=lambda q: (res[q], queue.index(q))):
            start[q] = t
            free -= nodes[q]
            running[q] = t + walltime[q]
            heapq.heappush(ends, (t + min(runtime[q], walltime[q]), q))
            del res[q]
        queue = [q for q in queue if start[q] < 0]
    return start
