"""Handing labs out and collecting them through an exchange folder (the class hub's; docs/jupyterhub.md).

The exchange is laid out as one course folder of nbgrader's exchange, so a course already on
nbgrader can use `nbgrader collect` on it too:

    EXCHANGE/outbound/<lab>/            the released labs, written by `agentos lab release`
    EXCHANGE/inbound/<student>+<lab>+<timestamp>+<random>/<lab>.ipynb   one submission each

`hand_out` gives a student the teaching notebooks and every released lab they do not have
yet, never overwriting one of their files, and refuses to hand out a notebook that still holds
a solution or hidden tests. `submit` drops a student's notebook into `inbound/`; `collect`
copies the newest submission of each student and lab into nbgrader's
`submitted/<student>/<lab>/<lab>.ipynb` (with `timestamp.txt`), which `agentos lab grade` and
nbgrader's autograde read.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import secrets
import shutil
from dataclasses import dataclass
from pathlib import Path

from .handout import LABS, notebooks_dir
from .nbgrader_format import BEGIN_HIDDEN, BEGIN_MARK_SCHEME, BEGIN_SOLUTION, LabInputError, read_notebook
from .release import ignored

EXCHANGE_ENV = "AGENTOS_EXCHANGE"
"""The variable naming the exchange folder (the hub sets it in every student's server)."""
STUDENT_ENV = "JUPYTERHUB_USER"
"""The variable JupyterHub sets to the user a single-user server belongs to."""
INBOUND, OUTBOUND = "inbound", "outbound"
# nbgrader's Exchange.timestamp_format (nbgrader/exchange/abc/exchange.py), in UTC.
TIMESTAMP_FORMAT = "%Y-%m-%d %H:%M:%S.%f %Z"
MAX_SUBMISSION_BYTES = 20 * 1024 * 1024
"""The largest notebook `submit` accepts (a notebook with big outputs; clear them to submit)."""
# nbgrader refuses '+' and '*' in a student id (submit.py); '/' and a leading '.' would leave
# the exchange folder or hide the entry.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.@-]{0,127}")


@dataclass(frozen=True)
class HandOut:
    """What `hand_out` added to a student's notebooks folder."""

    dest: Path
    """The student's notebooks folder."""
    added: tuple[Path, ...]
    """Files written (teaching notebooks and lab files new to the student)."""
    refused: tuple[str, ...]
    """Labs in outbound/ not handed out, each with the reason and the fix."""


@dataclass(frozen=True)
class Submission:
    """One notebook in the exchange's inbound folder."""

    student: str
    """The student's id (the hub's username)."""
    lab: str
    """The lab's id: the notebook's name without .ipynb."""
    timestamp: str
    """When it was submitted, in nbgrader's format (UTC)."""
    path: Path
    """The notebook in the exchange (or, once collected, in submitted/)."""


@dataclass(frozen=True)
class Collected:
    """What `collect` did."""

    collected: tuple[Submission, ...]
    """The newest submission of each student and lab, copied into submitted/ (paths there)."""
    unchanged: int
    """Student-lab pairs whose newest submission was already in submitted/."""
    skipped: tuple[str, ...]
    """Entries of inbound/ not collected, each with the reason."""


def check_name(value: str, what: str) -> str:
    """`value` if it can name a student or a lab in the exchange, else LabInputError."""
    if not _NAME.fullmatch(value):
        raise LabInputError(f"{what} {value!r}: use letters, digits, '_', '-', '.', '@' (no '+', '*', "
                            "'/', at most 128, not starting with '.' or '-')")
    return value


def exchange_from(value: Path | str | None) -> Path:
    """The exchange folder: `value`, else $AGENTOS_EXCHANGE; LabInputError naming the fix."""
    raw = value if value is not None else os.environ.get(EXCHANGE_ENV)
    if not raw:
        raise LabInputError(f"no exchange folder: pass --exchange DIR or set {EXCHANGE_ENV} "
                            "(the class hub sets it in every student's server)")
    path = Path(raw)
    if not path.is_dir():
        raise LabInputError(f"{path}: the exchange folder does not exist; the instructor creates it "
                            f"(the hub does at start-up) with {INBOUND}/ and {OUTBOUND}/ inside")
    return path


def _unreleased(lab: Path) -> str | None:
    """Why the lab folder must not reach a student (a notebook with a solution or hidden tests)."""
    for nb_path in sorted(lab.glob("*.ipynb")):
        nb = read_notebook(nb_path)
        for i, cell in enumerate(nb.cells):
            for marker in (BEGIN_SOLUTION, BEGIN_HIDDEN, BEGIN_MARK_SCHEME):
                if marker in cell.source:
                    return (f"{nb_path}: cell {i} holds '{marker}': this is the instructor's copy; "
                            f"release it instead: agentos lab release SOURCE {lab}")
    return None


def _copy_new(src: Path, dest: Path, added: list[Path]) -> None:
    """Copy the files of `src` missing in `dest` (regular files only; links are not followed)."""
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src)
        if ignored(rel) or path.is_symlink() or not path.is_file():
            continue
        target = dest / rel
        if target.exists() or target.is_symlink():
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        added.append(target)


def hand_out(exchange: Path, dest: Path, *, teaching: Path | None = None) -> HandOut:
    """Give the student at `dest` (their notebooks folder) the teaching notebooks and each lab
    of `exchange/outbound/` they do not have yet. A file the student already has is never
    touched; a lab whose notebook still holds a solution or hidden tests is refused."""
    added: list[Path] = []
    refused: list[str] = []
    dest.mkdir(parents=True, exist_ok=True)
    src = teaching if teaching is not None else notebooks_dir()
    for path in sorted(src.iterdir()) if src.is_dir() else []:
        if path.is_file() and not path.name.startswith(".") and not (dest / path.name).exists():
            shutil.copyfile(path, dest / path.name)
            added.append(dest / path.name)
    outbound = exchange / OUTBOUND
    for lab in sorted(outbound.iterdir()) if outbound.is_dir() else []:
        if not lab.is_dir() or lab.is_symlink() or not any(lab.glob("*.ipynb")):
            continue
        try:
            why = _unreleased(lab)
        except LabInputError as exc:
            why = str(exc)
        if why:
            refused.append(why)
            continue
        _copy_new(lab, dest / LABS / lab.name, added)
    return HandOut(dest, tuple(added), tuple(refused))


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime(TIMESTAMP_FORMAT)


def submit(notebook: Path, exchange: Path, student: str, *, lab: str | None = None,
           timestamp: str | None = None) -> Submission:
    """Copy the student's `notebook` into `exchange/inbound/` as nbgrader's submit names it.
    LabInputError (nothing written) for a bad name, a file that is not a notebook or too big."""
    check_name(student, "student")
    lab = check_name(lab if lab is not None else notebook.stem, "lab")
    inbound = exchange / INBOUND
    if not inbound.is_dir():
        raise LabInputError(f"{inbound}: no inbound folder in the exchange; the instructor creates it")
    if notebook.is_file() and notebook.stat().st_size > MAX_SUBMISSION_BYTES:
        raise LabInputError(f"{notebook}: {notebook.stat().st_size} bytes, over the "
                            f"{MAX_SUBMISSION_BYTES} a submission may have; clear the outputs "
                            "(Edit > Clear Outputs of All Cells) and submit again")
    read_notebook(notebook)  # a notebook, or one line naming why not
    data = notebook.read_bytes()
    stamp = timestamp or _now()
    entry = inbound / f"{student}+{lab}+{stamp}+{secrets.token_urlsafe(9)}"
    entry.mkdir()
    (entry / f"{lab}.ipynb").write_bytes(data)
    (entry / "timestamp.txt").write_text(stamp, encoding="utf-8")
    return Submission(student, lab, stamp, entry / f"{lab}.ipynb")


def _parse(entry: Path) -> Submission | str:
    """The submission an inbound entry holds, or why it is skipped."""
    parts = entry.name.split("+")
    if len(parts) not in (3, 4):
        return f"{entry.name}: not <student>+<lab>+<timestamp>[+<random>]"
    student, lab, stamp = parts[:3]
    try:
        check_name(student, "student")
        check_name(lab, "lab")
        dt.datetime.strptime(stamp, TIMESTAMP_FORMAT)
    except (LabInputError, ValueError) as exc:
        return f"{entry.name}: {exc}"
    if entry.is_symlink() or not entry.is_dir():
        return f"{entry.name}: not a folder (a link or a file)"
    nb = entry / f"{lab}.ipynb"
    if nb.is_symlink() or not nb.is_file():
        return f"{entry.name}: no regular file {lab}.ipynb inside"
    return Submission(student, lab, stamp, nb)


def _when(stamp: str) -> dt.datetime:
    return dt.datetime.strptime(stamp, TIMESTAMP_FORMAT)


def collect(exchange: Path, submitted: Path, *, lab: str | None = None) -> Collected:
    """Copy the newest submission of each student (and lab, or only `lab`) from the exchange into
    `submitted/<student>/<lab>/<lab>.ipynb` with its `timestamp.txt`; an older or equal one
    already there is replaced only by a newer one."""
    inbound = exchange / INBOUND
    if not inbound.is_dir():
        raise LabInputError(f"{inbound}: no inbound folder in the exchange")
    newest: dict[tuple[str, str], Submission] = {}
    skipped: list[str] = []
    for entry in sorted(inbound.iterdir()):
        got = _parse(entry)
        if isinstance(got, str):
            skipped.append(got)
            continue
        if lab is not None and got.lab != lab:
            continue
        key = (got.student, got.lab)
        if key not in newest or _when(got.timestamp) > _when(newest[key].timestamp):
            newest[key] = got
    collected: list[Submission] = []
    unchanged = 0
    for (student, name), sub in sorted(newest.items()):
        folder = submitted / student / name
        stamp_file = folder / "timestamp.txt"
        if stamp_file.is_file():
            try:
                if _when(stamp_file.read_text(encoding="utf-8").strip()) >= _when(sub.timestamp):
                    unchanged += 1
                    continue
            except ValueError:
                pass  # an unreadable timestamp there: the exchange's copy is the one to keep
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / f"{name}.ipynb"
        tmp = folder / f".{name}.ipynb.collecting"
        shutil.copyfile(sub.path, tmp)
        os.replace(tmp, target)  # a crash leaves the old copy or the new one, never half of one
        stamp_file.write_text(sub.timestamp, encoding="utf-8")
        collected.append(Submission(student, name, sub.timestamp, target))
    return Collected(tuple(collected), unchanged, tuple(skipped))


def make_exchange(root: Path) -> Path:
    """Create the exchange folder with inbound/ (anyone may drop a submission, no one but its
    owner list it: nbgrader's 0o733 plus the sticky bit) and outbound/ (readable by all)."""
    (root / OUTBOUND).mkdir(parents=True, exist_ok=True)
    (root / INBOUND).mkdir(parents=True, exist_ok=True)
    os.chmod(root / INBOUND, 0o1733)
    os.chmod(root / OUTBOUND, 0o755)
    return root
