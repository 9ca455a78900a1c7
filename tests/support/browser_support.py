"""Open an HTML file in headless Chromium and report what a reader would see.

Talks the DevTools protocol over `--remote-debugging-pipe` (null-terminated JSON on
file descriptors 3 and 4), so it needs no websocket library and no network port.
Test support (not shipped in the package): used by the report's browser test and by
`scripts/screenshot_report.sh`.
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--hide-scrollbars",
    "--remote-debugging-pipe",
)

# Evaluated in the page once it has loaded: waits for every image to decode, then
# describes the sections and images so a test can assert on them.
PAGE_PROBE = """
// The leaderboard as laid out: boxes in page px [left, top, right, bottom] of the verdict, the
// table, its scroll box, and per row each cell's box and the box its content actually covers
// (null for an empty cell).
function leaderboardLayout() {
  const section = document.querySelector('section[data-section="leaderboard"]');
  const table = section && section.querySelector('table');
  if (!table) return null;
  const box = r => [r.left + window.scrollX, r.top + window.scrollY, r.right + window.scrollX, r.bottom + window.scrollY];
  const content = el => { const range = document.createRange(); range.selectNodeContents(el);
                          const r = range.getBoundingClientRect();
                          return r.width || r.height ? box(r) : null; };  // null: an empty cell
  const verdict = section.querySelector('.verdict');
  const scroller = table.closest('.scroll') || table.parentElement;
  return {
    verdict: verdict ? {text: verdict.innerText, box: box(verdict.getBoundingClientRect())} : null,
    table: box(table.getBoundingClientRect()),
    scroll: {clientWidth: scroller.clientWidth, scrollWidth: scroller.scrollWidth},
    rows: Array.from(table.rows).map(tr => Array.from(tr.cells).map(td => ({
      text: td.innerText, box: box(td.getBoundingClientRect()), content: content(td)}))),
  };
}
(async () => {
  const images = Array.from(document.images);
  await Promise.all(images.map(img => img.decode().catch(() => null)));
  return {
    title: document.title,
    sections: Array.from(document.querySelectorAll('section[data-section]')).map(s => ({
      id: s.dataset.section,
      missing: s.dataset.missing === 'true',
      text: s.innerText.slice(0, 2000),
      images: s.querySelectorAll('img').length,
      tables: s.querySelectorAll('table').length,
    })),
    images: images.map(img => ({
      id: img.dataset.figure || img.id || '', alt: img.alt, complete: img.complete,
      naturalWidth: img.naturalWidth, naturalHeight: img.naturalHeight,
      srcPrefix: img.currentSrc.slice(0, 22), srcLength: img.currentSrc.length,
    })),
    badges: Array.from(document.querySelectorAll('.badge-random')).map(b => ({
      visible: b.getBoundingClientRect().width > 0 && getComputedStyle(b).visibility !== 'hidden',
      section: (b.closest('section') || {dataset: {}}).dataset.section || null,
      row: (b.closest('tr') || b.parentElement).innerText.slice(0, 80),
    })),
    banners: Array.from(document.querySelectorAll('.banner')).map(b => b.innerText),
    bodyHeight: document.documentElement.scrollHeight,
    viewportWidth: document.documentElement.clientWidth,
    pageWidth: document.documentElement.scrollWidth,
    leaderboard: leaderboardLayout(),
  };
})()
"""


class BrowserError(RuntimeError):
    """Chromium could not be started or did not answer."""


@dataclass
class PageReport:
    """What happened while the page loaded, and the probe's description of it."""

    url: str
    console_errors: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    log_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    requested_urls: list[str] = field(default_factory=list)
    dom: dict[str, Any] = field(default_factory=dict)
    screenshot: bytes | None = None

    @property
    def errors(self) -> list[str]:
        return self.console_errors + self.exceptions + self.log_errors + self.failed_requests

    @property
    def network_urls(self) -> list[str]:
        """Requested URLs that would leave the machine (anything but data:, file:, about:)."""
        return [u for u in self.requested_urls if not u.startswith(("data:", "file:", "about:"))]


def find_chromium() -> str | None:
    explicit = os.environ.get("CRSBENCH_CHROMIUM")
    if explicit:
        return explicit if Path(explicit).exists() else None
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


class _Pipe:
    """One Chromium process and its DevTools pipe."""

    def __init__(self, executable: str, profile: Path) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire_fds() -> None:  # runs in the child before exec
            # dup first: a pipe end may already sit on fd 3 or 4, and dup2 onto itself
            # would keep its close-on-exec flag.
            read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)
            os.set_inheritable(3, True)
            os.set_inheritable(4, True)

        self.stderr_file = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(
            [executable, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            preexec_fn=wire_fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.stderr_file,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(
        self, method: str, params: dict | None = None, session: str | None = None, timeout_s: float = 30.0
    ) -> dict[str, Any]:
        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        payload = json.dumps(message).encode() + b"\0"
        try:
            os.write(self._to_chrome, payload)
        except BrokenPipeError as exc:
            raise BrowserError(f"chromium exited: {self.stderr_tail()}") from exc
        deadline = time.monotonic() + timeout_s
        while True:
            reply = self._receive(deadline)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise BrowserError(f"{method} failed: {reply['error'].get('message')}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout_s: float) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                return event
        deadline = time.monotonic() + timeout_s
        while True:
            event = self._receive(deadline)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _receive(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium closed the pipe: {self.stderr_tail()}")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def stderr_tail(self) -> str:
        self.stderr_file.seek(0)
        lines = self.stderr_file.read().decode(errors="replace").strip().splitlines()
        return lines[-1] if lines else "no output"

    def close(self) -> None:
        try:
            if self.proc.poll() is None:
                with contextlib.suppress(BrowserError):
                    self.send("Browser.close", timeout_s=5)
                try:
                    self.proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            for fd in (self._to_chrome, self._from_chrome):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self.stderr_file.close()


def inspect_page(
    html: Path,
    screenshot: Path | None = None,
    width: int = 1280,
    height: int = 900,
    full_page: bool = True,
    timeout_s: float = 60.0,
    executable: str | None = None,
    probe: str = PAGE_PROBE,
) -> PageReport:
    """Load `html` in headless Chromium; collect console errors, the DOM probe and a screenshot.

    `probe` is the script evaluated in the page once it has loaded (its value is `dom`).
    """
    executable = executable or find_chromium()
    if executable is None:
        raise BrowserError("chromium not found (install it with `bash scripts/test-deps.sh`)")
    url = Path(html).resolve().as_uri()
    report = PageReport(url=url)
    with tempfile.TemporaryDirectory(prefix="crsbench-chromium-") as profile:
        pipe = _Pipe(executable, Path(profile))
        try:
            _drive(pipe, report, width, height, full_page, screenshot is not None, timeout_s, probe)
        finally:
            pipe.close()
    if screenshot is not None and report.screenshot is not None:
        screenshot.parent.mkdir(parents=True, exist_ok=True)
        tmp = screenshot.with_name(f".tmp-{screenshot.name}")
        tmp.write_bytes(report.screenshot)
        os.replace(tmp, screenshot)
    return report


def _drive(
    pipe: _Pipe,
    report: PageReport,
    width: int,
    height: int,
    full_page: bool,
    want_screenshot: bool,
    timeout_s: float,
    probe: str = PAGE_PROBE,
) -> None:
    target = pipe.send("Target.createTarget", {"url": "about:blank"}, timeout_s=timeout_s)
    session = pipe.send(
        "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}, timeout_s=timeout_s
    )["sessionId"]
    for domain in ("Runtime", "Log", "Network", "Page"):
        pipe.send(f"{domain}.enable", session=session)
    pipe.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    pipe.events.clear()
    navigation = pipe.send("Page.navigate", {"url": report.url}, session=session, timeout_s=timeout_s)
    if navigation.get("errorText"):
        raise BrowserError(f"could not open {report.url}: {navigation['errorText']}")
    pipe.wait_for("Page.loadEventFired", timeout_s)
    result = pipe.send(
        "Runtime.evaluate",
        {"expression": probe, "awaitPromise": True, "returnByValue": True},
        session=session,
        timeout_s=timeout_s,
    )
    if "exceptionDetails" in result:
        raise BrowserError(f"page probe failed: {result['exceptionDetails'].get('text')}")
    report.dom = result["result"].get("value") or {}
    if want_screenshot:
        if full_page:
            content = pipe.send("Page.getLayoutMetrics", session=session)["cssContentSize"]
            full_height = min(int(content["height"]) + 1, 16384)
            pipe.send(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": full_height, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
        shot = pipe.send(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": full_page},
            session=session,
            timeout_s=timeout_s,
        )
        report.screenshot = base64.b64decode(shot["data"])
    _collect_events(pipe.events, report)


def _collect_events(events: list[dict[str, Any]], report: PageReport) -> None:
    urls: dict[str, str] = {}
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            text = " ".join(str(a.get("value", a.get("description", ""))) for a in params.get("args", []))
            report.console_errors.append(text)
        elif method == "Runtime.exceptionThrown":
            details = params.get("exceptionDetails", {})
            report.exceptions.append(details.get("exception", {}).get("description") or details.get("text", ""))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            entry = params["entry"]
            report.log_errors.append(f"{entry.get('source')}: {entry.get('text')} {entry.get('url', '')}".strip())
        elif method == "Network.requestWillBeSent":
            urls[params.get("requestId", "")] = params.get("request", {}).get("url", "")
            report.requested_urls.append(urls[params.get("requestId", "")])
        elif method == "Network.loadingFailed" and not params.get("canceled"):
            url = urls.get(params.get("requestId", ""), "?")
            report.failed_requests.append(f"request failed: {url[:120]} ({params.get('errorText')})")


def main(argv: list[str] | None = None) -> int:
    """`python tests/support/browser_support.py REPORT.html OUT.png [WIDTH [HEIGHT]]`: screenshot a report.

    Without HEIGHT the whole page is captured; with it, only the top WIDTH x HEIGHT view.
    """
    args = sys.argv[1:] if argv is None else argv
    if len(args) not in (2, 3, 4) or not all(a.isdigit() for a in args[2:]):
        print("usage: python tests/support/browser_support.py REPORT.html OUT.png [WIDTH [HEIGHT]]", file=sys.stderr)
        return 1
    width = int(args[2]) if len(args) > 2 else 1280
    height = int(args[3]) if len(args) > 3 else 900
    try:
        page = inspect_page(Path(args[0]), Path(args[1]), width=width, height=height, full_page=len(args) < 4)
    except BrowserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    for error in page.errors:
        print(f"page error: {error}", file=sys.stderr)
    print(f"wrote {args[1]} ({len(page.dom.get('images', []))} images, {len(page.dom.get('sections', []))} sections)")
    return 1 if page.errors else 0


if __name__ == "__main__":
    raise SystemExit(main())
