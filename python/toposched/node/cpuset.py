"""Real cpusets: Linux cgroup v2 (``cpuset`` controller) or v1 (the ``cpuset`` hierarchy).

Each job gets ``<base>/<prefix>/job_<id>`` with ``cpuset.cpus`` and ``cpuset.mems``; a
process joins it by writing its pid to ``cgroup.procs`` (its children follow, so the
whole process tree is contained); at release every process left in it is killed, then
the directory is removed.

Which hierarchy: ``detect("auto")`` takes cgroup v2 when a cgroup2 mount offers the
``cpuset`` controller (``cgroup.controllers``), else the v1 ``cpuset`` mount, else it
raises :class:`CgroupUnavailable` saying what it found. On v2 the base is the mount point
or a delegated subtree (``--cgroup-root``); the agent enables ``+cpuset`` in the base's and
its own directory's ``cgroup.subtree_control``.
"""

from __future__ import annotations

import errno
import os
import re
import signal
import time
from pathlib import Path

from ..errors import ToposchedError
from .cpulist import format_cpulist, parse_cpulist

JOB_ID = re.compile(r"^[A-Za-z0-9_.+\-]{1,100}$")  # Slurm: 123, 123_4 (arrays), 123+0 (het jobs)


class CgroupUnavailable(ToposchedError):
    """No usable cpuset hierarchy (not mounted, not writable, or refused by the kernel)."""


class CgroupError(ToposchedError):
    """A cpuset operation the kernel refused."""


def check_job_id(job: str) -> str:
    if not isinstance(job, str) or not JOB_ID.match(job) or job in (".", ".."):
        raise ValueError(f"job id {job!r} must be 1-100 characters of A-Z a-z 0-9 _ . + -")
    return job


def _mounts(path: str = "/proc/self/mounts") -> list[tuple[str, str, list[str]]]:
    out: list[tuple[str, str, list[str]]] = []
    try:
        text = Path(path).read_text()
    except OSError:
        return out
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 4:
            out.append((parts[1].replace("\\040", " "), parts[2], parts[3].split(",")))
    return out


def _write(path: Path, value: str) -> None:
    try:
        with open(path, "w") as f:
            f.write(value)
    except OSError as exc:
        raise CgroupError(f"cannot write {value!r} to {path}: {exc.strerror}") from None


class CpusetBackend:
    """Common part of the two hierarchies; ``self.parent`` is ``<base>/<prefix>``."""

    version = ""
    effective_cpus_file = "cpuset.effective_cpus"  # v1 names; v2 says cpuset.cpus.effective
    effective_mems_file = "cpuset.effective_mems"

    def __init__(self, base: Path, prefix: str) -> None:
        check_job_id(prefix)
        self.base = Path(base)
        self.prefix = prefix
        self.parent = self.base / prefix

    def describe(self) -> str:
        return f"cgroup {self.version} cpusets under {self.parent}"

    # -- set up -------------------------------------------------------------------
    def setup(self) -> None:
        """Create the parent directory (and enable what it needs); raise
        :class:`CgroupUnavailable` with the reason if the kernel refuses."""
        raise NotImplementedError

    def machine_cpus(self) -> frozenset[int]:
        """CPUs the jobs' cpusets may use (the parent's effective CPUs)."""
        return parse_cpulist(self._read(self.effective_cpus_file, self.parent) or self._read("cpuset.cpus", self.parent))

    def machine_mems(self) -> frozenset[int]:
        return parse_cpulist(self._read(self.effective_mems_file, self.parent) or self._read("cpuset.mems", self.parent))

    def _read(self, name: str, d: Path) -> str:
        try:
            return (d / name).read_text().strip()
        except OSError:
            return ""

    def discard_if_empty(self) -> None:
        """Remove the parent directory if it holds no job cpusets (a refused start)."""
        if self.parent.is_dir() and not self.jobs():
            try:
                self.parent.rmdir()
            except OSError:
                pass

    # -- jobs ---------------------------------------------------------------------
    def path(self, job: str) -> Path:
        return self.parent / f"job_{check_job_id(job)}"

    def exists(self, job: str) -> bool:
        return self.path(job).is_dir()

    def jobs(self) -> list[str]:
        """Job ids of every ``job_*`` cpuset under the parent."""
        if not self.parent.is_dir():
            return []
        return sorted(p.name[4:] for p in self.parent.iterdir() if p.is_dir() and p.name.startswith("job_"))

    def create(self, job: str, cpus: frozenset[int], mems: tuple[int, ...] | frozenset[int]) -> Path:
        """Create (or re-apply) the job's cpuset with these CPUs and memory nodes."""
        d = self.path(job)
        try:
            d.mkdir(exist_ok=True)
        except OSError as exc:
            raise CgroupError(f"cannot create {d}: {exc.strerror}") from None
        # v1 needs mems before a process may join; order cpus then mems works for both.
        _write(d / "cpuset.cpus", format_cpulist(cpus))
        _write(d / "cpuset.mems", format_cpulist(mems))
        return d

    def cpus(self, job: str) -> frozenset[int]:
        return parse_cpulist(self._read("cpuset.cpus", self.path(job)))

    def procs(self, job: str) -> list[int]:
        text = self._read("cgroup.procs", self.path(job))
        return sorted(int(x) for x in text.split()) if text else []

    def attach(self, job: str, pid: int) -> None:
        _write(self.path(job) / "cgroup.procs", str(int(pid)))

    def remove(self, job: str, timeout_s: float = 10.0) -> int:
        """Kill every process left in the job's cpuset, then remove it. Returns how many
        processes were killed. Raises :class:`CgroupError` if it cannot be emptied."""
        d = self.path(job)
        if not d.is_dir():
            return 0
        killed: set[int] = set()
        deadline = time.monotonic() + timeout_s
        while True:
            pids = self.procs(job)
            if not pids:
                try:
                    d.rmdir()
                    return len(killed)
                except FileNotFoundError:
                    return len(killed)
                except OSError as exc:
                    if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                        raise CgroupError(f"cannot remove {d}: {exc.strerror}") from None
            else:
                self._kill(d, pids)
                killed.update(pids)
            if time.monotonic() > deadline:
                raise CgroupError(f"processes {pids} in {d} survived SIGKILL for {timeout_s:.0f} s")
            time.sleep(0.02)

    def _kill(self, d: Path, pids: list[int]) -> None:
        # Loop until empty: a process may fork between our read and our kill.
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class CpusetV1(CpusetBackend):
    version = "v1"

    def setup(self) -> None:
        try:
            self.parent.mkdir(exist_ok=True)
        except OSError as exc:
            raise CgroupUnavailable(f"cannot create {self.parent} ({exc.strerror}); the agent needs root or a writable cpuset hierarchy") from None
        # A new v1 cpuset starts with no CPUs and no memory nodes: give the parent all of its
        # own parent's, or no job cpuset below it could get any.
        for name in ("cpuset.cpus", "cpuset.mems"):
            if not self._read(name, self.parent):
                try:
                    _write(self.parent / name, self._read(name, self.base))
                except CgroupError as exc:
                    raise CgroupUnavailable(str(exc)) from None


class CpusetV2(CpusetBackend):
    version = "v2"
    effective_cpus_file = "cpuset.cpus.effective"
    effective_mems_file = "cpuset.mems.effective"

    def setup(self) -> None:
        controllers = self._read("cgroup.controllers", self.base).split()
        if "cpuset" not in controllers:
            raise CgroupUnavailable(f"{self.base}/cgroup.controllers has no cpuset (has: {' '.join(controllers) or 'nothing'}); delegate it or use --cgroup-root")
        try:
            if "cpuset" not in self._read("cgroup.subtree_control", self.base).split():
                _write(self.base / "cgroup.subtree_control", "+cpuset")
            self.parent.mkdir(exist_ok=True)
            if "cpuset" not in self._read("cgroup.subtree_control", self.parent).split():
                _write(self.parent / "cgroup.subtree_control", "+cpuset")
        except (OSError, CgroupError) as exc:
            msg = exc.strerror if isinstance(exc, OSError) else str(exc)
            raise CgroupUnavailable(f"cannot set up {self.parent}: {msg} (a v2 base must have no processes of its own; pass a delegated --cgroup-root)") from None

    def _kill(self, d: Path, pids: list[int]) -> None:
        kill_file = d / "cgroup.kill"
        if kill_file.exists():  # Linux >= 5.14: the kernel kills the whole cgroup at once
            try:
                _write(kill_file, "1")
                return
            except CgroupError:
                pass
        super()._kill(d, pids)


def detect(mode: str = "auto", prefix: str = "toposched", cgroup_root: str | None = None,
           mounts_file: str = "/proc/self/mounts") -> CpusetBackend:
    """The cpuset hierarchy to use, set up and checked; :class:`CgroupUnavailable` if none.

    ``mode``: ``auto``, ``v1`` or ``v2``. ``cgroup_root`` overrides the base directory (a
    delegated v2 subtree, or a v1 cpuset directory).
    """
    if mode not in ("auto", "v1", "v2"):
        raise CgroupUnavailable(f"unknown cpuset mode {mode!r} (auto, v1, v2, none)")
    mounts = _mounts(mounts_file)
    found = []
    candidates: list[CpusetBackend] = []
    for mnt, fstype, opts in mounts:
        if fstype == "cgroup2":
            ctrl = Path(mnt, "cgroup.controllers")
            has = ctrl.read_text().split() if ctrl.exists() else []
            found.append(f"cgroup2 at {mnt} (controllers: {' '.join(has) or 'none'})")
            if mode in ("auto", "v2") and ("cpuset" in has or cgroup_root):
                candidates.append(CpusetV2(Path(cgroup_root or mnt), prefix))
        elif fstype == "cgroup" and "cpuset" in opts:
            found.append(f"cgroup v1 cpuset at {mnt}")
            if mode in ("auto", "v1"):
                candidates.append(CpusetV1(Path(cgroup_root or mnt), prefix))
    # v2 first when both offer cpusets (a v2 hierarchy only lists cpuset if v1 does not hold it).
    candidates.sort(key=lambda b: 0 if b.version == "v2" else 1)
    errors = []
    for backend in candidates:
        try:
            backend.setup()
            return backend
        except CgroupUnavailable as exc:
            errors.append(str(exc))
    what = "; ".join(found) or "no cgroup hierarchy mounted"
    why = ("; ".join(errors)) if errors else f"no {'cpuset' if mode == 'auto' else mode + ' cpuset'} controller available"
    raise CgroupUnavailable(f"no usable cgroup cpusets: {why} (found: {what}); run as root on a machine with cgroup cpusets, or pass --cpusets none to place without binding")
