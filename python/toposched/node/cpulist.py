"""Linux CPU list strings (``0-3,8,10-11``), as in ``cpuset.cpus`` and ``Cpus_allowed_list``.

>>> format_cpulist({0, 1, 2, 3, 8, 10, 11})
'0-3,8,10-11'
>>> sorted(parse_cpulist("24-39,48-53")) == list(range(24, 40)) + list(range(48, 54))
True
>>> format_cpulist(set())
''
"""

from __future__ import annotations

import re
from typing import Iterable


class CpuListError(ValueError):
    """A CPU list that cannot be read; the message says which part and why."""


#: Largest CPU number accepted (Linux's NR_CPUS is at most 8192). A list reaches the agent
#: from any client (POST /v1/query needs no token): 0-99999999999 built a set of 10^11
#: numbers, gigabytes a second, until the OOM killer came.
MAX_CPU = 65535
_NUMBER = re.compile(r"[0-9]+")


def parse_cpulist(text: str) -> frozenset[int]:
    """The set of CPU numbers a list such as ``0-3,8`` names (empty text: the empty set).
    Numbers above :data:`MAX_CPU`, or more than MAX_CPU + 1 CPUs named in all (ranges
    given again count again), are refused: the work is bounded whatever the text."""
    out: set[int] = set()
    text = text.strip()
    if not text:
        return frozenset()
    named = 0
    for part in text.split(","):
        part = part.strip()
        lo_text, sep, hi_text = part.partition("-")
        lo_text, hi_text = lo_text.strip(), hi_text.strip()
        # ASCII digits only: int() also reads '1_0' (CPU 10), '+3' and other scripts' digits
        if not _NUMBER.fullmatch(lo_text) or (sep and not _NUMBER.fullmatch(hi_text)):
            raise CpuListError(f"{part!r} is not a CPU number or a range A-B")
        lo = int(lo_text)
        hi = int(hi_text) if sep else lo
        if lo < 0 or hi < lo:
            raise CpuListError(f"{part!r} is not a valid range (need 0 <= A <= B)")
        if hi > MAX_CPU:
            raise CpuListError(f"{part[:40]!r}: CPU numbers go up to {MAX_CPU}")
        named += hi - lo + 1
        if named > MAX_CPU + 1:
            raise CpuListError(f"the list names more than {MAX_CPU + 1} CPUs")
        out.update(range(lo, hi + 1))
    return frozenset(out)


def format_cpulist(cpus: Iterable[int]) -> str:
    """The shortest Linux list form of a set of CPU numbers."""
    nums = sorted(set(cpus))
    parts: list[str] = []
    i = 0
    while i < len(nums):
        j = i
        while j + 1 < len(nums) and nums[j + 1] == nums[j] + 1:
            j += 1
        parts.append(str(nums[i]) if i == j else f"{nums[i]}-{nums[j]}")
        i = j + 1
    return ",".join(parts)
