"""Other people's reader of our browser pack in a real browser: the pack's documented
generation steps (tests/support/web_generate.mjs, the module the onnxruntime-node test runs) in a
page of headless Chromium under onnxruntime-web's WASM backend, single-threaded, served
with the pack from a 127.0.0.1 server of the test's own. Its audio is our runner's."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import SUPPORT
from tests.support.webhelp import JS_MAX_ABS, driver_job, npm_package, tiny_web_pack

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
DEADLINE_S = 120.0

pytestmark = pytest.mark.skipif(
    CHROMIUM is None or CHROMEDRIVER is None,
    reason="needs Debian's chromium and chromium-driver (apt-get install, as .ci/run does)",
)


class _Page:
    """What the server gives the page and what the page sends back."""

    def __init__(self, roots: dict[str, Path], job: bytes) -> None:
        self.roots, self.job = roots, job
        self.result: bytes | None = None
        self.error: str | None = None
        self.done = threading.Event()

    def file(self, url_path: str) -> Path | None:
        for prefix, root in self.roots.items():
            if url_path.startswith(prefix):
                path = (root / url_path[len(prefix) :]).resolve()
                if path.is_file() and path.is_relative_to(root.resolve()):
                    return path
        return None


def _handler(page: _Page) -> type[BaseHTTPRequestHandler]:
    types = {".mjs": "text/javascript", ".js": "text/javascript", ".wasm": "application/wasm",
             ".html": "text/html", ".json": "application/json"}  # fmt: skip

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # quiet
            pass

        def _send(self, body: bytes, content_type: str) -> None:
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            path = self.path.split("?")[0]
            if path == "/job.json":
                return self._send(page.job, "application/json")
            file = page.file(path)
            if file is None:
                return self.send_error(HTTPStatus.NOT_FOUND)
            self._send(file.read_bytes(), types.get(file.suffix, "application/octet-stream"))

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path == "/result":
                page.result = body
            else:
                page.error = body.decode(errors="replace")
            self._send(b"", "text/plain")
            page.done.set()

    return Handler


def _processes_with(marker: str) -> list[int]:
    """Process ids whose command line holds ``marker`` (Linux /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def test_onnxruntime_web_in_headless_chromium_speaks_as_our_runner(tmp_path) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    ort_web = npm_package("onnxruntime-web")
    job, ours = driver_job()
    page = _Page(
        {"/ort/": ort_web / "dist", "/driver/": SUPPORT, "/pack/": tiny_web_pack()},
        json.dumps(job).encode(),
    )
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(page))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    profile = tmp_path / "chromium-profile"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                 f"--user-data-dir={profile}"):  # fmt: skip
        options.add_argument(flag)
    try:
        browser = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            browser.set_page_load_timeout(DEADLINE_S)
            browser.get(f"http://127.0.0.1:{server.server_port}/driver/web_page.html")
            finished = page.done.wait(DEADLINE_S)
            status = browser.find_element("id", "status").text
        finally:
            browser.quit()
    finally:
        server.shutdown()
        server.server_close()
    assert finished, f"the page did not finish in {DEADLINE_S:.0f} s (status: {status!r})"
    assert page.error is None, page.error
    assert status == "done"
    theirs = np.frombuffer(page.result, np.float32)
    assert theirs.size == ours.size  # the same frames: the EOS decisions agree
    assert np.abs(theirs - ours).max() <= JS_MAX_ABS

    # The browser is gone with the test: no process of its profile is left.
    deadline = time.monotonic() + 60
    while _processes_with(str(profile)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _processes_with(str(profile)) == [], "chromium outlived the test"
    assert os.path.isdir(profile)
