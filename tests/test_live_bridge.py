"""slurm-bridge pieces that need no Slurm: squeue's time limits, sinfo's node states, and
Slurm commands that fail (retried, logged, then an error, never silently dropped)."""

from __future__ import annotations

import pytest

from toposched.live.bridge import SlurmCommands, SlurmError, node_is_good, parse_time_limit


@pytest.mark.parametrize(
    "text, seconds",
    [("1:00", 60), ("0:30", 30), ("10:00", 600), ("1:00:00", 3600), ("2-03:04:05", 2 * 86400 + 3 * 3600 + 4 * 60 + 5), ("UNLIMITED", 99), ("5", 300)],
)
def test_time_limits(text, seconds):
    assert parse_time_limit(text, 99) == seconds


@pytest.mark.parametrize(
    "state, good",
    [("idle", True), ("alloc", True), ("mix", True), ("comp", True), ("idle~", True), ("drain", False), ("drng", False),
     ("down", False), ("down*", False), ("idle*", False), ("fail", False), ("maint", False)],
)
def test_node_states(state, good):
    assert node_is_good(state) is good


def test_failing_commands_are_retried_and_logged(tmp_path):
    lines: list[str] = []
    s = SlurmCommands(timeout_s=5, retries=3, log=lines.append)
    with pytest.raises(SlurmError, match="failed 3 times"):
        s.run("sh", "-c", "echo boom >&2; exit 1")
    assert len(lines) == 3 and all("boom" in ln for ln in lines)
    # a timeout is a failure too
    s = SlurmCommands(timeout_s=0.2, retries=2, log=lines.append)
    with pytest.raises(SlurmError, match="timed out"):
        s.run("sleep", "5")
    # a command that works the second time
    flag = tmp_path / "flag"
    assert s.run("sh", "-c", f"if [ -e {flag} ]; then echo ok; else touch {flag}; exit 1; fi") == "ok\n"
