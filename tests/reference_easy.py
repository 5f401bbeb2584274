"""An independent, deliberately plain implementation of classic EASY backfilling (and
FCFS) with interchangeable nodes, written from the rules in docs/semantics.md and not from
the Rust code. Used to compare start times job by job with the engine.

Rules: at each instant, ends (freeing nodes), then submits, then one pass. Pass: start
queued jobs in order while they fit; the first that does not fit is the head; its shadow
time is the expected end (start + requested time) of the running job at which enough
nodes become free (running jobs ordered by expected end, then row); extra = free nodes at
the shadow time beyond the head's need. Later jobs that fit start if they end by the
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
            for exp_end, r in sorted((e, r) for r, e in running.items()):
                if avail >= nodes[head]:
                    break
                avail += nodes[r]
                shadow = max(exp_end, t)
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
