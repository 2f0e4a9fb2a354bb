"""ContractWatch lists the directories it watches in one pass over each directory's entries
(a fresh kernel's first `%agent` starts a watch: issue 24). Differential: on generated trees
(files, directories, links to either, a dangling link) it lists the same directories and
gives up on the same trees as os.walk does (which the two-pass form it replaced followed)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos_kernel.jupyter import contract_watch


def _tree_walked(top: str, out: list[str]) -> bool:
    """What contract_watch._tree lists, by os.walk: every directory, parents first, until one
    holds a link (that one listed too: then False)."""
    for here, dirs, files in os.walk(top):
        out.append(here)
        if any(os.path.islink(os.path.join(here, name)) for name in (*dirs, *files)):
            return False
    return True


NAMES = ["a", "b", "c.json", "d"]
entries = st.lists(st.tuples(st.lists(st.sampled_from(NAMES), min_size=1, max_size=3),
                             st.sampled_from(["dir", "file", "link-dir", "link-file", "dangling"])),
                   max_size=10)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(made=entries)
def test_the_one_pass_tree_is_the_two_pass_one(tmp_path: Path, made: list[tuple[list[str], str]]) -> None:
    root = tmp_path / f"t{len(list(tmp_path.iterdir()))}"
    root.mkdir()
    (root / "target").mkdir()
    (root / "target.txt").write_text("x")
    for parts, kind in made:
        path = root.joinpath(*parts)
        if path.exists() or path.is_symlink():
            continue
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except (FileExistsError, NotADirectoryError):
            continue  # a file on the way
        if kind == "dir":
            path.mkdir()
        elif kind == "file":
            path.write_text("{}")
        else:
            path.symlink_to({"link-dir": root / "target", "link-file": root / "target.txt",
                             "dangling": root / "nowhere"}[kind])
    before: list[str] = []
    after: list[str] = []
    assert contract_watch._tree(str(root), after) == _tree_walked(str(root), before)
    assert after == before


def test_a_link_among_the_contract_paths_gives_up_and_a_missing_one_is_watched(tmp_path: Path) -> None:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "agentos.yaml").write_text("x: 1\n")
    watch = contract_watch.ContractWatch.start([tmp_path / "agentos.yaml", tmp_path / "schemas",
                                                tmp_path / "skills"])  # skills/ missing
    assert watch is not None
    try:
        (tmp_path / "skills").mkdir()
        assert watch.changed()
    finally:
        watch.close()
    (tmp_path / "agents").symlink_to(tmp_path / "schemas")
    assert contract_watch.ContractWatch.start([tmp_path / "agents"]) is None
