"""Helpers students and our tests share: a scratch workspace and readable checks.

`scratch_workspace()` is what every workbench notebook calls first: it does what `agentos init` does
into a fresh temporary directory and moves the working directory there, so sessions,
notes and skills written by the notebook never land in the repository, and session ids
start again at s0001 on every run (which is what makes the notebooks' outputs repeatable).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from .workspace import CONTRACT_DIRS, InitError, create_workspace


@dataclass(frozen=True)
class ScratchWorkspace:
    """A throwaway workspace holding a fresh copy of the reference contracts."""

    root: Path
    """The workspace directory (agentos.yaml, schemas/, agents/, skills/, ...)."""
    previous_cwd: Path | None = field(default=None, compare=False)
    """Where the working directory was before (None when it was not changed)."""

    @property
    def sessions(self) -> Path:
        """Where this workspace's session logs go."""
        return self.root / "sessions"

    def session_ids(self) -> list[str]:
        """Sessions recorded here so far, sorted."""
        return sorted(p.parent.name for p in self.sessions.glob("*/.events.jsonl"))

    def close(self) -> None:
        """Go back to the previous working directory and delete the workspace."""
        if self.previous_cwd is not None and _cwd_inside(self.root):
            os.chdir(self.previous_cwd)
        _remove(self.root.parent)

    def __enter__(self) -> ScratchWorkspace:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # The temporary path differs on every run, so neither repr shows it: a notebook
    # output that printed it would never compare equal under nbval.
    def __repr__(self) -> str:
        ids = self.session_ids()
        if ids:
            return f"scratch workspace with {len(ids)} session(s): {', '.join(ids)}"
        contents = ", ".join(n for n in ("agentos.yaml", *CONTRACT_DIRS) if (self.root / n).exists())
        where = "; it is now the working directory" if self.previous_cwd else ""
        return f"scratch workspace: a fresh copy of {contents}{where}"

    def _repr_html_(self) -> str:
        return f"<code>{_escape(repr(self))}</code>"


def scratch_workspace(*, chdir: bool = True, prefix: str = "agentos-ws-") -> ScratchWorkspace:
    """`agentos init` a new temporary directory; with `chdir`, make it the working directory
    (so `%agent` and `agentos` find it). It is deleted when the Python process exits."""
    root = Path(tempfile.mkdtemp(prefix=prefix)).resolve() / "workspace"
    try:
        create_workspace(root)  # what `agentos init` does
    except InitError as exc:
        raise RuntimeError(f"agentos init failed: {exc}") from None
    atexit.register(_remove, root.parent)
    previous = None
    if chdir:
        previous = Path.cwd()
        os.chdir(root)
    return ScratchWorkspace(root, previous)


def _cwd_inside(path: Path) -> bool:
    try:
        return Path.cwd().is_relative_to(path)
    except FileNotFoundError:  # the cwd is already gone
        return True


def _remove(tmp: Path) -> None:
    # Leave the directory first: IPython's own exit handlers still ask for the cwd.
    if _cwd_inside(tmp):
        os.chdir(tempfile.gettempdir())
    shutil.rmtree(tmp, ignore_errors=True)


def check(condition: object, what: str) -> None:
    """One readable check: prints `✓ what` when `condition` holds, else raises
    AssertionError(`✗ what`). Notebooks end with a list of these."""
    if not condition:
        raise AssertionError(f"✗ {what}")
    print(f"✓ {what}")


@contextmanager
def expect(what: str) -> Iterator[None]:
    """Around a test's call into a student's answer: an exception other than a failed check
    (the stub's NotImplementedError, a NameError for a cell not run yet, a KeyError for a file
    not written) fails as AssertionError(`✗ what (Name: message)`), so the test cell still says
    what was expected instead of ending on a bare traceback."""
    try:
        yield
    except AssertionError:
        raise
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        raise AssertionError(f"✗ {what} ({said})") from None  # the cell's line, not this one


def write_long_session(sessions: Path | str, session_id: str, n: int) -> Path:
    """Write a chained log of `n` events (n >= 2) to `<sessions>/<session_id>/.events.jsonl`
    and return its path: session.start, the reference trace's request events repeated (ids,
    seq, parents and chain renumbered), session.close. What a long class session looks like
    to the widgets and replay, without running the runtime thousands of times."""
    from dataclasses import replace

    from .store.events import LOG_NAME, canonical, chain_of, read_log
    from .workspace import reference_dir

    ref = list(read_log(reference_dir() / "sessions" / "example" / LOG_NAME))
    first, middle, last = ref[0], ref[1:-1], ref[-1]
    path = Path(sessions) / session_id / LOG_NAME
    path.parent.mkdir(parents=True, exist_ok=True)
    prev: str | None = None
    newest: dict[str, str] = {}  # reference id -> the id of its latest copy, for parent links
    with path.open("wb") as f:
        for i in range(1, n + 1):
            src = first if i == 1 else last if i == n else middle[(i - 2) % len(middle)]
            ev = replace(src, id=f"e{i:07d}", session_id=session_id, seq=i, chain=None,
                         parent_id=newest.get(src.parent_id or ""))
            newest[src.id] = ev.id
            ev = replace(ev, chain=chain_of(prev, ev))
            prev = ev.chain
            f.write(canonical(ev.to_dict()) + b"\n")
    return path


def add_reviewers(workspace: Path | str, n: int) -> list[str]:
    """Make the review phase of `workspace` fan out to `n` reviewer personas: copies of its
    reviewers, named `<reviewer>-000`, `-001`, ... (an L8 cycle at class scale)."""
    import re

    root = Path(workspace) / "workflows"
    src = sorted((root / "personas" / "reviewer").glob("*.md"))
    names = []
    for i in range(n):
        s = src[i % len(src)]
        name = f"{s.stem}-{i:03d}"
        (s.parent / f"{name}.md").write_text(
            s.read_text(encoding="utf-8").replace(f"name: {s.stem}", f"name: {name}", 1), encoding="utf-8")
        names.append(name)
    phase = root / "phases" / "review.md"
    text = re.sub(r"agents_invoked: \[.*?\]", f"agents_invoked: [{', '.join(names)}]",
                  phase.read_text(encoding="utf-8"), count=1)
    phase.write_text(text, encoding="utf-8")
    return names


def _escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


__all__ = ["ScratchWorkspace", "add_reviewers", "check", "scratch_workspace", "write_long_session"]
