"""A submission folder as the grader reads it: found, its language told, its files read safely.

The grader runs unsandboxed, so every read of a student's file here refuses what could make
it read something else: a path (or a symlink on the way) leading out of the folder, a
non-regular file (a FIFO would block), a file larger than the limit.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

MAX_READ = 16 << 20
LAYOUT_DIRS = ("runtime", "schemas", "agents", "skills")
LANG_SUFFIXES = {"python": (".py",), "go": (".go",), "typescript": (".ts", ".mts", ".js", ".mjs")}


class SubmissionFileError(Exception):
    """A student's file that cannot be read; the message names it and why."""


class NoSubmissions(ValueError):
    """The directory given to `agentos grade` holds no submission folder."""


def find_submissions(directory: Path) -> list[Path]:
    """Every non-hidden subfolder of `directory`, sorted by name (an empty folder is still a
    submission, graded zero, never skipped). NoSubmissions when there is none or when
    `directory` is itself one submission."""
    directory = Path(directory)
    if not directory.is_dir():
        raise NoSubmissions(f"{directory}: not a directory; pass the folder holding one folder per "
                            "student, e.g. assignments/lab-07/")
    own = [d for d in LAYOUT_DIRS if (directory / d).is_dir()]
    if own:
        raise NoSubmissions(f"{directory}: looks like one submission (it has {own[0]}/); pass its "
                            f"parent folder, e.g. {directory.parent}/")
    found = sorted(p for p in directory.iterdir()
                   if p.is_dir() and not p.is_symlink() and not p.name.startswith((".", "_")))
    if not found:
        raise NoSubmissions(f"{directory}: no submission folders in it; expected one folder per "
                            "student (e.g. assignments/lab-07/20230001/)")
    return found


def inside(root: Path, rel: str | Path) -> Path:
    """`root/rel`, refusing a path that resolves outside `root` (.., absolute, symlinks)."""
    path = Path(root) / rel
    real, base = os.path.realpath(path), os.path.realpath(root)
    if real != base and not real.startswith(base + os.sep):
        raise SubmissionFileError(f"{Path(rel).as_posix()}: leads outside the submission "
                                  f"(to {real}); submit the file itself, not a link")
    return path


def read_bytes(root: Path, rel: str | Path, limit: int = MAX_READ) -> bytes:
    """The bytes of a regular file inside `root`; SubmissionFileError says why not."""
    path = inside(root, rel)
    shown = Path(rel).as_posix()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise SubmissionFileError(f"{shown}: missing") from None
    except OSError as exc:
        raise SubmissionFileError(f"{shown}: cannot read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SubmissionFileError(f"{shown}: not a regular file")
        if st.st_nlink != 1:  # a hard link may share its bytes with a file outside the folder
            raise SubmissionFileError(f"{shown}: a hard link; submit the file itself")
        if st.st_size > limit:
            raise SubmissionFileError(f"{shown}: {st.st_size} bytes, more than the {limit} the "
                                      "grader reads")
        with os.fdopen(fd, "rb", closefd=False) as f:
            return f.read(limit + 1)
    finally:
        os.close(fd)


def read_text(root: Path, rel: str | Path, limit: int = MAX_READ) -> str:
    """A UTF-8 text file inside `root` (see read_bytes)."""
    data = read_bytes(root, rel, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise SubmissionFileError(f"{Path(rel).as_posix()}: not UTF-8 text (byte {exc.start})") from None


def files(root: Path, under: str, suffixes: tuple[str, ...]) -> Iterator[str]:
    """Relative paths (posix) of regular files below `root/under` ending in a suffix, sorted;
    symlinked directories are not followed."""
    base = Path(root) / under
    if not base.is_dir() or base.is_symlink():
        return iter(())
    found = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d not in ("__pycache__", "node_modules")
                             and not d.startswith("."))
        for name in filenames:
            path = Path(dirpath) / name
            if name.endswith(suffixes) and path.is_file() and not path.is_symlink():
                found.append(path.relative_to(root).as_posix())
    return iter(sorted(found))


def language(root: Path) -> str:
    """python, go or typescript by the runtime/ sources (most files wins; ties go to the
    spec's primary language, Python); unknown when runtime/ has none."""
    counts = {lang: sum(1 for _ in files(root, "runtime", sfx)) for lang, sfx in LANG_SUFFIXES.items()}
    best = max(counts.values())
    if best == 0:
        return "unknown"
    return next(lang for lang in LANG_SUFFIXES if counts[lang] == best)
