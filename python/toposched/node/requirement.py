"""The topology requirement of a job on one host: what it asks the node agent for.

Two spellings, one meaning. The text form follows seed 002's ``bsub -extsched`` strings
(``KEY=VALUE`` items separated by ``;``, keys case-insensitive); the JSON form is an
object with the same keys in lower case:

``CORES=N``            N whole cores (every PU of each core).
``PUS=N``              N PUs (hardware threads); two PUs of one core count as radius "core".
``CPU_LIST=24-39,48``  exactly these PUs (hwloc os_index numbers), as the paper's CPU_LIST.
                       With CORES/PUS as well, the count must match.
``MEM_PER_NUMA_MB=M``  every NUMA domain the placement touches must have M MiB of its
                       local memory not yet promised to other jobs; M is reserved there.
``SHARED``             the cores may be shared with other SHARED jobs (not with exclusive
                       ones). Default: exclusive (IRIX ``CPUSET_CPU_EXCLUSIVE``).
``MEMORY_MANDATORY``   memory only from the NUMA domains of the job's CPUs (``cpuset.mems``
                       = those domains); default: all of the node's memory nodes.
``WAIT``               wait for a good placement: refuse (answer "wait") while the best
                       radius available now is worse than the best radius the job would get
                       on an empty node. Default (``BEST``): take the best available now.
``MAX_RADIUS=LEVEL``   with WAIT, the worst radius accepted instead of the empty-node one
                       (core, l2, l3, numa, package, machine); a placement inside one
                       object of that kind is accepted too.
``CPUSET_OPTIONS=A|B`` IRIX names: ``CPUSET_CPU_EXCLUSIVE`` (the default),
                       ``CPUSET_MEMORY_MANDATORY`` and ``CPUSET_MEMORY_LOCAL`` (both mean
                       MEMORY_MANDATORY).

Flags also take ``=yes``/``=no`` (``1``/``0``, ``true``/``false``).

>>> r = parse_requirement("CORES=4;MEM_PER_NUMA_MB=1024;CPUSET_OPTIONS=CPUSET_CPU_EXCLUSIVE|CPUSET_MEMORY_MANDATORY;WAIT")
>>> (r.cores, r.mem_per_numa_mb, r.exclusive, r.memory_mandatory, r.wait)
(4, 1024, True, True, True)
>>> parse_requirement({"pus": 2, "shared": True}).to_text()
'PUS=2;SHARED'
>>> parse_requirement("CORES=0")
Traceback (most recent call last):
...
toposched.node.requirement.RequirementError: requirement field 'CORES': must be at least 1, got 0
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ToposchedError
from .cpulist import CpuListError, format_cpulist, parse_cpulist
from .hwloc import LEVELS


class RequirementError(ToposchedError, ValueError):
    """A requirement that cannot be read; names the field at fault."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"requirement field '{field}': {message}")


@dataclass(frozen=True)
class Requirement:
    cores: int | None = None
    pus: int | None = None
    cpu_list: frozenset[int] | None = None
    mem_per_numa_mb: int = 0
    exclusive: bool = True
    memory_mandatory: bool = False
    wait: bool = False
    max_radius: str | None = None

    @property
    def unit(self) -> str:
        """What the count counts: "core" or "pu"."""
        return "pu" if self.pus is not None and self.cores is None else "core"

    @property
    def count(self) -> int | None:
        return self.cores if self.cores is not None else self.pus

    def to_text(self) -> str:
        """The canonical text form (parses back to an equal requirement)."""
        items = []
        if self.cores is not None:
            items.append(f"CORES={self.cores}")
        if self.pus is not None:
            items.append(f"PUS={self.pus}")
        if self.cpu_list is not None:
            items.append(f"CPU_LIST={format_cpulist(self.cpu_list)}")
        if self.mem_per_numa_mb:
            items.append(f"MEM_PER_NUMA_MB={self.mem_per_numa_mb}")
        if not self.exclusive:
            items.append("SHARED")
        if self.memory_mandatory:
            items.append("MEMORY_MANDATORY")
        if self.wait:
            items.append("WAIT")
        if self.max_radius is not None:
            items.append(f"MAX_RADIUS={self.max_radius}")
        return ";".join(items)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"exclusive": self.exclusive, "memory_mandatory": self.memory_mandatory, "wait": self.wait}
        if self.cores is not None:
            out["cores"] = self.cores
        if self.pus is not None:
            out["pus"] = self.pus
        if self.cpu_list is not None:
            out["cpu_list"] = format_cpulist(self.cpu_list)
        if self.mem_per_numa_mb:
            out["mem_per_numa_mb"] = self.mem_per_numa_mb
        if self.max_radius is not None:
            out["max_radius"] = self.max_radius
        return out


_TRUE = {"", "yes", "1", "true", "on"}
_FALSE = {"no", "0", "false", "off"}
_KEYS = {"cores", "pus", "cpu_list", "mem_per_numa_mb", "shared", "exclusive", "memory_mandatory",
         "wait", "best", "max_radius", "cpuset_options"}
_IRIX = {"CPUSET_CPU_EXCLUSIVE": "exclusive", "CPUSET_MEMORY_MANDATORY": "memory_mandatory",
         "CPUSET_MEMORY_LOCAL": "memory_mandatory"}


def _flag(key: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    v = str(value).strip().lower()
    if v in _TRUE:
        return True
    if v in _FALSE:
        return False
    raise RequirementError(key.upper(), f"expected yes or no, got {value!r}")


def _count(key: str, value: object) -> int:
    if isinstance(value, bool):
        raise RequirementError(key.upper(), f"expected a whole number, got {value!r}")
    text = str(value).strip()
    # ASCII digits only: int() also reads '1_0' (10) and other scripts' digits
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise RequirementError(key.upper(), f"expected a whole number, got {value!r}")
    n = int(text)
    if n < 1:
        raise RequirementError(key.upper(), f"must be at least 1, got {n}")
    return n


def parse_requirement(spec: str | dict[str, Any] | Requirement) -> Requirement:
    """A :class:`Requirement` from the text form, a JSON object, or one already parsed."""
    if isinstance(spec, Requirement):
        return spec
    items: dict[str, object] = {}
    if isinstance(spec, str) and spec.lstrip().startswith("{"):
        # the JSON object form given as text (node-ctl --requirement '{"cores": 4}'): read
        # as KEY=VALUE it was "unknown key '{"CORES": 4}'"
        try:
            obj = json.loads(spec)
        except ValueError as exc:
            raise RequirementError("requirement", f"starts like a JSON object but does not read as one ({exc}); or give KEY=VALUE;... (CORES=4;WAIT)") from None
        if not isinstance(obj, dict):
            raise RequirementError("requirement", "expected a JSON object such as {\"cores\": 4} or KEY=VALUE;... (CORES=4;WAIT)")
        spec = obj
    if isinstance(spec, dict):
        for k, v in spec.items():
            items[str(k).lower()] = v
    elif isinstance(spec, str):
        for part in spec.split(";"):
            part = part.strip()
            if not part:
                continue
            key, _, value = part.partition("=")
            key = key.strip().lower()
            if key in items:
                raise RequirementError(key.upper(), "given twice")
            items[key] = value.strip()
    else:
        raise RequirementError("requirement", f"expected a string or an object, got {type(spec).__name__}")
    unknown = sorted(set(items) - _KEYS)
    if unknown:
        raise RequirementError(unknown[0].upper(), f"unknown key (known: {', '.join(k.upper() for k in sorted(_KEYS))})")

    cores = _count("cores", items["cores"]) if "cores" in items else None
    pus = _count("pus", items["pus"]) if "pus" in items else None
    if cores is not None and pus is not None:
        raise RequirementError("PUS", "give CORES or PUS, not both")
    cpu_list = None
    if "cpu_list" in items:
        try:
            cpu_list = parse_cpulist(str(items["cpu_list"]))
        except CpuListError as exc:
            raise RequirementError("CPU_LIST", str(exc)) from None
        if not cpu_list:
            raise RequirementError("CPU_LIST", "is empty")
        n = cores if cores is not None else pus
        if pus is not None and n != len(cpu_list):
            raise RequirementError("CPU_LIST", f"names {len(cpu_list)} PUs but PUS={n}")
    if cores is None and pus is None and cpu_list is None:
        raise RequirementError("CORES", "say how many: CORES=N, PUS=N or CPU_LIST=...")
    mem = 0
    if "mem_per_numa_mb" in items:
        mem = _count("mem_per_numa_mb", items["mem_per_numa_mb"])
    exclusive = True
    memory_mandatory = False
    if "cpuset_options" in items:
        for name in str(items["cpuset_options"]).split("|"):
            name = name.strip().upper()
            if name not in _IRIX:
                raise RequirementError("CPUSET_OPTIONS", f"unknown option {name!r} (known: {', '.join(sorted(_IRIX))})")
            if _IRIX[name] == "memory_mandatory":
                memory_mandatory = True
    if "shared" in items:
        exclusive = not _flag("shared", items["shared"])
    if "exclusive" in items:
        if "shared" in items and _flag("exclusive", items["exclusive"]) != exclusive:
            raise RequirementError("SHARED", "contradicts EXCLUSIVE")
        exclusive = _flag("exclusive", items["exclusive"])
    if "memory_mandatory" in items:
        memory_mandatory = _flag("memory_mandatory", items["memory_mandatory"])
    wait = _flag("wait", items["wait"]) if "wait" in items else False
    if "best" in items:
        if _flag("best", items["best"]) and wait:
            raise RequirementError("BEST", "contradicts WAIT")
        wait = not _flag("best", items["best"])
    max_radius = None
    if "max_radius" in items:
        max_radius = str(items["max_radius"]).strip().lower()
        if max_radius not in LEVELS:
            raise RequirementError("MAX_RADIUS", f"expected one of {', '.join(LEVELS)}, got {items['max_radius']!r}")
        wait = True
    return Requirement(cores, pus, cpu_list, mem, exclusive, memory_mandatory, wait, max_radius)
