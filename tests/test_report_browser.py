"""The compare report in a real browser: Debian's headless Chromium, driven through the
DevTools protocol over a pipe (``--remote-debugging-pipe``: no websocket library needed).

It loads report.html from disk with every host name unresolvable, then checks: no
JavaScript exception, console error or error log entry; every request stayed on
``file:``/``data:``; each plotly figure rendered (``svg.main-svg`` with drawn traces);
every static image loaded. It keeps a 1400 x 3000 screenshot in tests/artifacts/.

Chromium comes from ``scripts/test.sh`` (``apt-get install chromium``). Without it the
test skips, except under CI (``CI=true``), where it fails.
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import REPO
from test_reporting import make_compare_dir
from toposched.reporting import build_compare_report

ARTIFACTS = REPO / "tests" / "artifacts"
WIDTH, HEIGHT = 1400, 3000


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    message = "Chromium not found: scripts/test.sh installs Debian's chromium package (apt-get install chromium)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(message)
    pytest.skip(message)


class Browser:
    """Headless Chromium and one page, spoken to with CDP messages over fds 3 and 4."""

    def __init__(self, binary: str, profile: Path) -> None:
        cmd_r, self._cmd_w = os.pipe()  # we write commands, Chromium reads fd 3
        self._out_r, out_w = os.pipe()  # Chromium writes fd 4, we read

        def child_fds() -> None:
            a, b = os.dup(cmd_r), os.dup(out_w)
            os.dup2(a, 3)  # os.dup2 makes 3 and 4 inheritable
            os.dup2(b, 4)

        args = [
            binary,
            "--headless=new",
            "--remote-debugging-pipe",
            f"--user-data-dir={profile}",
            "--host-resolver-rules=MAP * ~NOTFOUND",
            "--no-first-run",
            "--no-default-browser-check",
            "--disable-gpu",
            "--disable-extensions",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
            "about:blank",
        ]
        if os.geteuid() == 0:
            args.insert(1, "--no-sandbox")
        self._log = open(profile.parent / "chromium.log", "wb")  # noqa: SIM115 - closed in close()
        self.proc = subprocess.Popen(
            args, preexec_fn=child_fds, close_fds=False, stdin=subprocess.DEVNULL, stdout=self._log, stderr=self._log, start_new_session=True
        )
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._id = 0
        self.events: list[dict[str, Any]] = []
        self.session: str | None = None

    def _read(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from Chromium")
            ready, _, _ = select.select([self._out_r], [], [], left)
            if ready:
                chunk = os.read(self._out_r, 1 << 20)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe; see {self._log.name}")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method: str, params: dict[str, Any] | None = None, *, page: bool = True, timeout: float = 30) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if page and self.session:
            msg["sessionId"] = self.session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            if m.get("id") == self._id:
                if "error" in m:
                    raise RuntimeError(f"{method}: {m['error']}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str, timeout: float = 60) -> dict[str, Any]:
        for m in self.events:
            if m.get("method") == method:
                return m
        deadline = time.monotonic() + timeout
        while True:
            m = self._read(deadline)
            self.events.append(m)
            if m.get("method") == method:
                return m

    def open_page(self) -> None:
        target = self.call("Target.createTarget", {"url": "about:blank"}, page=False)["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True}, page=False)["sessionId"]
        for domain in ("Runtime", "Log", "Page", "Network"):
            self.call(f"{domain}.enable")

    def evaluate(self, expression: str) -> Any:
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True})
        if "exceptionDetails" in r:
            raise RuntimeError(r["exceptionDetails"])
        return r["result"].get("value")

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                try:
                    self.call("Browser.close", page=False, timeout=5)
                except Exception:  # noqa: BLE001 - killed below
                    pass
                try:
                    self.proc.wait(5)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)  # the group this test started
                    self.proc.wait(5)
        finally:
            for fd in (self._cmd_w, self._out_r):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._log.close()


PLOTS_STATE = """
(() => Array.from(document.querySelectorAll('.plotly-graph-div')).map(d => ({
    id: d.id,
    svgs: d.querySelectorAll('svg.main-svg').length,
    traces: d.querySelectorAll('g.trace').length,
})))()
"""

IMAGES_STATE = """
(() => Array.from(document.images).map(i => ({src: i.getAttribute('src'), ok: i.complete && i.naturalWidth > 0})))()
"""


@pytest.fixture(scope="module")
def chromium() -> str:
    return _chromium()


@pytest.fixture(scope="module")
def browser_report(tmp_path_factory) -> Path:
    return build_compare_report(make_compare_dir(tmp_path_factory.mktemp("browser_compare"), n_jobs=1500))


def test_report_loads_and_renders_in_headless_chromium(chromium, browser_report, tmp_path):
    profile = tmp_path / "profile"
    profile.mkdir()
    b = Browser(chromium, profile)
    try:
        b.open_page()
        b.call("Emulation.setDeviceMetricsOverride", {"width": WIDTH, "height": HEIGHT, "deviceScaleFactor": 1, "mobile": False})
        b.call("Page.navigate", {"url": browser_report.resolve().as_uri()})
        b.wait_event("Page.loadEventFired")
        deadline = time.monotonic() + 20
        plots = b.evaluate(PLOTS_STATE)
        while not (plots and all(p["svgs"] and p["traces"] for p in plots)) and time.monotonic() < deadline:
            time.sleep(0.2)
            plots = b.evaluate(PLOTS_STATE)
        images = b.evaluate(IMAGES_STATE)
        title = b.evaluate("document.title")
        shot = b.call("Page.captureScreenshot", {"format": "png"})
        time.sleep(0.3)
        b.evaluate("1")  # collect late events
    finally:
        b.close()

    png = tmp_path / "report.png"
    png.write_bytes(base64.b64decode(shot["data"]))
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(png, ARTIFACTS / "report.png")

    errors = []
    for e in b.events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.exceptionThrown":
            errors.append(params["exceptionDetails"].get("exception", {}).get("description") or params["exceptionDetails"].get("text"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            errors.append(params["entry"]["text"])
    assert errors == []

    requests = [e["params"]["request"]["url"] for e in b.events if e.get("method") == "Network.requestWillBeSent"]
    assert requests, "the page load was not observed"
    assert [u for u in requests if not u.startswith(("file:", "data:", "about:", "blob:"))] == []

    assert title.startswith("toposched compare:")
    assert [p["id"] for p in plots] == ["plot-aphbyjobsize", "plot-utilization", "plot-makespan", "plot-meanwaitbyjobsize"]
    assert all(p["svgs"] >= 1 and p["traces"] >= 1 for p in plots), plots
    assert images and all(i["ok"] for i in images), images

    from PIL import Image

    with Image.open(png) as im:
        assert im.size == (WIDTH, HEIGHT)
        colours = im.convert("RGB").resize((140, 300)).getcolors(maxcolors=1 << 16)
        assert colours is not None and len(colours) > 50  # not a blank page
