"""The distributions as PyPI would take them: the sdist and the wheel, built by hatchling
without isolation (offline, as tests/labs/test_handout.py builds the wheel), pass `twine check
--strict`, carry the LICENSE and PEP 639 metadata (an SPDX expression and the file)."""

from __future__ import annotations

import email
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from .helpers import REPO

pytest.importorskip("twine", reason="twine comes with the test extra (pip install -e '.[test]')")

BUILD = "import sys, hatchling.build as b; b.build_sdist(sys.argv[1]); b.build_wheel(sys.argv[1])"


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-c", BUILD, str(out)], cwd=REPO, capture_output=True,
                           text=True, check=False, timeout=300)
    assert built.returncode == 0, built.stderr[-2000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return sdist, wheel


def test_twine_check_strict_passes_on_both(dists: tuple[Path, Path]) -> None:
    done = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, dists)],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


def test_the_license_is_inside_both_and_the_metadata_says_mit(dists: tuple[Path, Path]) -> None:
    sdist, wheel = dists
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License") and "agentos-kernel developers" in text
    with tarfile.open(sdist) as tar:
        root = sdist.name.removesuffix(".tar.gz")
        member = tar.extractfile(f"{root}/LICENSE")
        assert member is not None and member.read().decode() == text
        pkg_info = tar.extractfile(f"{root}/PKG-INFO")
        assert pkg_info is not None
        sdist_meta = email.message_from_bytes(pkg_info.read())
    with zipfile.ZipFile(wheel) as whl:
        info = next(n.split("/")[0] for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
        assert whl.read(f"{info}/licenses/LICENSE").decode() == text
        meta = email.message_from_bytes(whl.read(f"{info}/METADATA"))
    for m in (meta, sdist_meta):
        assert m["License-Expression"] == "MIT" and m.get_all("License-File") == ["LICENSE"]
        assert m["License"] is None  # PEP 639: the expression replaces the free-text field
        assert m["Author"] == "agentos-kernel developers"
        classifiers = m.get_all("Classifier") or []
        assert {"Framework :: Jupyter", "Intended Audience :: Education", "Topic :: Education",
                "Programming Language :: Python :: 3.11"} <= set(classifiers)
        assert not [c for c in classifiers if c.startswith("License ::")]  # PEP 639 forbids both
