"""The tour in a real browser: JupyterLab on 127.0.0.1 with a token, headless Chromium driven
by Python playwright. Run all cells, then check that the LayerStepper rendered as a widget
(not "Loading widget…" nor an error) and that a click on Next changes the layer it shows.

The notebook served is a scratch copy with its stored outputs cleared, so everything the test
finds on the page was produced by the live kernel. A screenshot is saved as a test artifact
(in $AGENTOS_TEST_ARTIFACTS when set, else in pytest's tmp dir). Where Chromium or playwright
is missing the test is skipped with the reason; it never passes without a browser.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from .conftest import NOTEBOOKS

# Debian's Chromium (never a `playwright install` download); AGENTOS_CHROMIUM points elsewhere.
CHROMIUM = Path(os.environ.get("AGENTOS_CHROMIUM", "/usr/bin/chromium"))
TOUR = "00_tour.ipynb"
LAST_CHECK = "✓ both requests left a log in the scratch workspace"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_server(url: str, proc: subprocess.Popen[bytes], log: Path, limit_s: float = 60) -> None:
    """Poll /api/status until the server answers (a wait, not an assertion on time)."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.25)
    raise RuntimeError(f"jupyter lab did not answer on {url}:\n{log.read_text()[-3000:]}")


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[str]:
    """A JupyterLab serving a scratch copy of the tour; yields the notebook's URL."""
    if not CHROMIUM.is_file():
        pytest.skip(f"browser test skipped: Chromium is not installed at {CHROMIUM} "
                    "(apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"browser test skipped: Python playwright is not importable ({exc})")
    root, home, settings = tmp_path / "root", tmp_path / "home", tmp_path / "settings"
    for d in (root, home, settings, tmp_path / "workspaces"):
        d.mkdir()
    nb = nbformat.read(NOTEBOOKS / TOUR, as_version=4)
    for cell in nb.cells:  # served without stored outputs: what the page shows, the kernel made
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, root / TOUR)
    news = settings / "@jupyterlab" / "apputils-extension" / "notification.jupyterlab-settings"
    news.parent.mkdir(parents=True)
    news.write_text(json.dumps({"fetchNews": "false"}))
    port, token = _free_port(), secrets.token_hex(16)
    env = {**os.environ, "HOME": str(home), "JUPYTER_CONFIG_DIR": str(home / ".jupyter"),
           "IPYTHONDIR": str(home / ".ipython"), "TMPDIR": str(tmp_path)}
    log = tmp_path / "jupyterlab.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={port}", "--ServerApp.port_retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={settings}",
             f"--LabApp.workspaces_dir={tmp_path / 'workspaces'}"],
            stdout=out, stderr=subprocess.STDOUT, env=env, cwd=root)
    try:
        _wait_for_server(f"http://127.0.0.1:{port}/api/status?token={token}", proc, log)
        yield f"http://127.0.0.1:{port}/lab/tree/{TOUR}?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("AGENTOS_TEST_ARTIFACTS")
    if where:
        path = Path(where)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("artifacts")


def test_the_tour_renders_the_stepper_and_next_changes_the_layer(
        lab: str, artifacts: Path, record_property: pytest.RecordProperty) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.set_default_timeout(60_000)
            # expect() has its own 5 s default: too short for a kernel start on a loaded machine.
            expect.set_options(timeout=60_000)
            page.goto(lab)
            # The kernel exists and is idle (the toolbar indicator says idle before it exists).
            idle = re.compile(r"\(ipykernel\) \| Idle$")
            expect(page.locator(".jp-StatusBar-TextItem", has_text=idle)).to_be_visible()
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            # The last cell's checks print only when every cell before it has run.
            expect(page.locator(".jp-OutputArea-output", has_text=LAST_CHECK)).to_be_visible()

            stepper = page.locator(".jp-OutputArea-output .agentos-stepper")
            expect(stepper).to_have_count(1)
            active = stepper.locator(".agentos-layer.active")
            expect(active).to_have_count(1)
            expect(active).to_have_attribute("data-layer", "L4")  # event 1: session.start
            expect(stepper.locator(".widget-html-content", has_text="event 1 of 32")).to_be_visible()
            notebook = page.locator(".jp-Notebook")
            for broken in ("Loading widget", "Error displaying widget"):
                expect(notebook).not_to_contain_text(broken)

            stepper.locator("button", has_text="Next").click()
            expect(active).to_have_attribute("data-layer", "L6")  # event 2: hook.fired SessionStart
            expect(stepper.locator(".widget-html-content", has_text="event 2 of 32")).to_be_visible()
            expect(stepper.locator(".agentos-hook")).to_contain_text("SessionStart (none) -> allow")

            shot = artifacts / "tour-stepper.png"
            stepper.scroll_into_view_if_needed()
            page.screenshot(path=str(shot))
            record_property("screenshot", str(shot))
            print(f"screenshot: {shot}")
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()

