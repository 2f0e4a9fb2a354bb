"""Class-day defects 7 and 9: the spec the README names as the contract is in the repository,
and the README says how to run JupyterLab in a container and open the notebooks without
dirtying the checkout."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from .helpers import REPO


def test_the_spec_the_readme_names_is_shipped() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    named = re.findall(r"\(docs/spec/[^)\s]+\.md\)", readme)
    assert named, "the README links the spec"
    for link in named:
        spec = REPO / link.strip("()")
        assert spec.is_file(), f"{link} does not resolve"
        text = spec.read_text(encoding="utf-8")
        # the contract's own names, as the code uses them
        for name in ("Fail-closed Cases", "Lab Rubric", "I-1", "I-5", "dispatch_tool"):
            assert name in text, name
    for doc in ("README.md", "docs/architecture.md"):
        for path in re.findall(r"`([\w/.-]*agent-os-runtime\.ko\.md)`", (REPO / doc).read_text()):
            assert (REPO / path).is_file(), f"{doc} names {path}, which is not in the repository"


def test_jupyter_in_a_container_and_a_clean_checkout() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## The workbench (Jupyter)", 1)[1].split("\n## ", 1)[0]
    assert "jupyter lab notebooks/ --allow-root" in section
    assert "agentos notebooks /tmp/agentos-notebooks && jupyter lab /tmp/agentos-notebooks" in section
    assert "cp -r notebooks" not in readme, "a plain copy hands students the instructor notebooks"
    ignored = (REPO / ".gitignore").read_text(encoding="utf-8").splitlines()
    assert ".ipynb_checkpoints/" in ignored


def test_git_ignores_checkpoints_next_to_a_notebook() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    probe = "notebooks/.ipynb_checkpoints/00_tour-checkpoint.ipynb"
    done = subprocess.run(["git", "-C", str(REPO), "check-ignore", "--no-index", "-q", probe],
                          capture_output=True, check=False)
    assert done.returncode == 0, f"{probe} would show in git status"


def test_the_readme_says_when_to_use_lab_check_and_when_grade() -> None:
    """Class-day defect (issue 22): one paragraph telling the two commands apart."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Graded labs", 1)[1].split("\n## ", 1)[0]
    para = next(p for p in section.split("\n\n") if p.startswith("**`lab check` or `grade`?**"))
    text = " ".join(para.split())
    assert "`agentos lab check` is for one notebook lab" in text and "sandbox" in text
    assert "student checking their own notebook" in text and "instructor checking one submission" in text
    assert "`agentos grade` is for the spec's Lab 07 submission folder" in text and "Lab Rubric" in text
    assert "Batch grading: `docs/labs.md`." in text
