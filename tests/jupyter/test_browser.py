"""The tour in a real browser: JupyterLab on 127.0.0.1 with a token, headless Chromium driven
by Python playwright. Run all cells, then check that the LayerStepper rendered as a widget
(not "Loading widget…" nor an error) and that a click on Next changes the layer it shows.

The notebook served is a scratch copy with its stored outputs cleared, so everything the test
finds on the page was produced by the live kernel. A screenshot is saved as a test artifact
(in $AGENTOS_TEST_ARTIFACTS when set, else in pytest's tmp dir). Where Chromium or playwright
is missing the test is skipped with the reason; it never passes without a browser.
"""

from __future__ import annotations

import contextlib
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
from typing import Any

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


def _needs_a_browser() -> None:
    if not CHROMIUM.is_file():
        pytest.skip(f"browser test skipped: Chromium is not installed at {CHROMIUM} "
                    "(apt-get install chromium)")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"browser test skipped: Python playwright is not importable ({exc})")


@contextlib.contextmanager
def _serve(tmp_path: Path, name: str, nb: nbformat.NotebookNode) -> Iterator[str]:
    """JupyterLab serving `nb` (as `name`, outputs cleared) from a scratch root; yields its URL."""
    root, home, settings = tmp_path / "root", tmp_path / "home", tmp_path / "settings"
    for d in (root, home, settings, tmp_path / "workspaces"):
        d.mkdir()
    for cell in nb.cells:  # served without stored outputs: what the page shows, the kernel made
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, root / name)
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
        yield f"http://127.0.0.1:{port}/lab/tree/{name}?token={token}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[str]:
    """A JupyterLab serving a scratch copy of the tour; yields the notebook's URL."""
    _needs_a_browser()
    with _serve(tmp_path, TOUR, nbformat.read(NOTEBOOKS / TOUR, as_version=4)) as url:
        yield url


LIVE = "live_step.ipynb"
LIVE_CELLS = [
    "from agentos_kernel.cli.main import main\nmain(['init', 'ws'])",
    "from agentos_kernel.jupyter.widgets.livestep import LiveStepper\n"
    "w = LiveStepper('hello, greet Ada', workspace='ws', layers={'L1'})\nw",
]


@pytest.fixture
def live_lab(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A JupyterLab serving a notebook that opens a LiveStepper; yields (URL, its workspace)."""
    _needs_a_browser()
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in LIVE_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                 "language": "python"}
    with _serve(tmp_path, LIVE, nb) as url:
        yield url, tmp_path / "root" / "ws"


@pytest.fixture
def artifacts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    where = os.environ.get("AGENTOS_TEST_ARTIFACTS")
    if where:
        path = Path(where)
        path.mkdir(parents=True, exist_ok=True)
        return path
    return tmp_path_factory.mktemp("artifacts")


def _run_all(browser: Any, url: str) -> Any:
    """A page on the notebook at `url`, once its kernel is idle, with Run All Cells clicked."""
    from playwright.sync_api import expect

    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    # expect() has its own 5 s default: too short for a kernel start on a loaded machine.
    expect.set_options(timeout=60_000)
    page.goto(url)
    # The kernel exists and is idle (the toolbar indicator says idle before it exists).
    idle = re.compile(r"\(ipykernel\) \| Idle$")
    expect(page.locator(".jp-StatusBar-TextItem", has_text=idle)).to_be_visible()
    page.get_by_role("menuitem", name="Run", exact=True).click()
    page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
    return page


def test_the_tour_renders_the_stepper_and_next_changes_the_layer(
        lab: str, artifacts: Path, record_property: pytest.RecordProperty) -> None:
    from playwright.sync_api import expect, sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            page = _run_all(browser, lab)
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



def test_a_deny_clicked_in_the_live_stepper_ends_in_the_log(
        live_lab: tuple[str, Path], artifacts: Path) -> None:
    """The kernel is not blocked while the run waits for a person: the click reaches it, the
    hook denies, and the deny is in the session's log with actor human."""
    from playwright.sync_api import expect, sync_playwright

    url, ws = live_lab
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            page = _run_all(browser, url)
            live = page.locator(".jp-OutputArea-output .agentos-live")
            expect(live).to_have_count(1)
            human = live.locator(".agentos-human")
            expect(human).to_contain_text("PreToolUse: a person decides")
            expect(human).to_contain_text("echo")
            done = live.locator(".agentos-done")
            for _ in range(10):  # the scripted worker retries after a deny: each retry asks again
                if done.count():
                    break
                deny = human.locator("button", has_text="Deny")
                if deny.is_visible():
                    deny.click()
                page.wait_for_timeout(500)
            expect(done).to_contain_text("NOT ok")
            expect(live.locator(".agentos-live-trace")).to_contain_text("human")
            page.screenshot(path=str(artifacts / "live-stepper-deny.png"))
        finally:
            browser.close()
    logs = list((ws / "sessions").glob("*/.events.jsonl"))
    assert len(logs) == 1
    events = [json.loads(x) for x in logs[0].read_text().splitlines()]
    denied = [e for e in events if e["type"] == "hook.fired" and e["actor"] == "human"]
    assert denied and denied[0]["payload"]["decision"] == "deny"
    assert denied[0]["payload"]["reason"] == "denied by the instructor"
    assert not any(e["type"] == "tool.invoke" for e in events)
