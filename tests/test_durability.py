"""Durability (issue 13): the profile's `fsync` policy decides when a session's log reaches
the disk. Proven by counting the fsync calls each policy makes and on which file, never by
timing (the measured cost is in bench/RESULTS.md)."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
import yaml

from agentos_kernel import ContractError, Runtime
from agentos_kernel.store.durability import DEFAULT_FSYNC, Durability
from agentos_kernel.store.events import Event, read_log, verify_chain
from agentos_kernel.store.jsonl import JsonlEventStore
from agentos_kernel.validate import validate_workspace

Synced = list[tuple[str, str]]
"""(kind, path) of each fsync: kind is "file" or "dir"."""


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> Synced:
    """Every os.fsync the runtime makes, in order (each still reaches the real fsync)."""
    calls: Synced = []
    real = os.fsync

    def spy(fd: int) -> None:
        kind = "dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"
        calls.append((kind, os.readlink(f"/proc/self/fd/{fd}")))
        real(fd)

    monkeypatch.setattr(os, "fsync", spy)
    return calls


def ev(n: int) -> Event:
    return Event(id=f"s1-e{n}", session_id="s1", ts=f"2026-01-01T00:00:00.{n:03d}Z",
                 type="test.event", actor="tester", payload={"n": n}, seq=n)


def write_session(root: Path, durability: Durability, events: int) -> Path:
    store = JsonlEventStore(root, durability)
    store.create("s1")
    for n in range(1, events + 1):
        store.append(ev(n))
    store.close("s1")
    return store.path("s1")


@pytest.mark.parametrize(("durability", "file_syncs"), [
    (Durability("never"), 0),
    (Durability("close"), 1),            # the close only (the new log's name with it)
    (Durability("every_n", 4), 4),       # the first line, after lines 5 and 9, the close (line 10)
    (Durability("every_n", 3), 4),       # the first line, after lines 4, 7, 10; nothing left at close
    (Durability("always"), 10),          # every line; nothing left at close
], ids=["never", "close", "every_4", "every_3", "always"])
def test_each_policy_fsyncs_the_log_when_it_says(tmp_path: Path, synced: Synced,
                                                 durability: Durability, file_syncs: int) -> None:
    log = write_session(tmp_path / "sessions", durability, events=10).resolve()
    files = [p for kind, p in synced if kind == "file"]
    dirs = [p for kind, p in synced if kind == "dir"]
    assert files == [str(log)] * file_syncs
    # a new log's name is made durable too: its directory and the sessions directory, once
    assert dirs == ([] if durability.fsync == "never"
                    else [str(log.parent), str(log.parent.parent)])
    assert len(list(read_log(log))) == 10


def test_close_fsyncs_nothing_while_the_session_runs_then_the_log_before_its_name(
        tmp_path: Path, synced: Synced) -> None:
    store = JsonlEventStore(tmp_path / "sessions", Durability("close"))
    store.create("s1")
    for n in range(1, 4):
        store.append(ev(n))
    assert synced == []  # a power cut now may lose the running session (docs/reliability.md)
    store.close("s1")
    log = store.path("s1").resolve()
    assert synced == [("file", str(log)), ("dir", str(log.parent)), ("dir", str(log.parent.parent))]


def test_close_fsyncs_a_log_once_more_only_when_lines_are_waiting(tmp_path: Path,
                                                                  synced: Synced) -> None:
    log = write_session(tmp_path / "sessions", Durability("close"), events=1).resolve()
    assert [k for k, _ in synced] == ["file", "dir", "dir"]  # all at close
    synced.clear()
    store = JsonlEventStore(tmp_path / "sessions", Durability("close"))
    store.reopen("s1")  # an amendment: the log exists, so only the close syncs it
    store.append(ev(2))
    store.close("s1")
    assert synced == [("file", str(log))]


def _profile(workspace: Path, **extra: object) -> None:
    doc = yaml.safe_load((workspace / "agentos.yaml").read_text())
    doc["profiles"]["scripted"].update(extra)
    (workspace / "agentos.yaml").write_text(yaml.safe_dump(doc))


def test_the_default_policy_is_close_and_an_existing_profile_stays_valid(
        runtime: Runtime, synced: Synced) -> None:
    assert DEFAULT_FSYNC == "close"
    assert runtime.profile.fsync == "close" and runtime.store.durability == Durability("close")
    result = runtime.handle_user_request("hello, greet Ada")
    log = result.value.log_path.resolve()
    assert [p for k, p in synced if k == "file"] == [str(log)]


def test_the_profile_policy_reaches_the_store(workspace: Path, synced: Synced) -> None:
    _profile(workspace, fsync="always")
    rt = Runtime.from_workspace(workspace)
    result = rt.handle_user_request("hello, greet Ada")
    events = list(read_log(result.value.log_path))
    assert verify_chain(events) is None
    assert [p for k, p in synced if k == "file"] == [str(result.value.log_path.resolve())] * len(events)

    synced.clear()
    _profile(workspace, fsync="never")
    assert Runtime.from_workspace(workspace).handle_user_request("hello, greet Ada").value.ok
    assert synced == []


@pytest.mark.parametrize(("extra", "field", "says"), [
    ({"fsync": "sometimes"}, "profiles.scripted.fsync", "is not one of"),
    ({"fsync": "every_n"}, "profiles.scripted", "fsync_every"),
    ({"fsync": "every_n", "fsync_every": 0}, "profiles.scripted.fsync_every", "minimum"),
    ({"fsync": "close", "fsync_every": 8}, "profiles.scripted.fsync", "every_n"),
    ({"fsync_every": 8}, "profiles.scripted", "fsync"),
], ids=["unknown", "every_n-without-n", "n-zero", "n-without-every_n", "n-alone"])
def test_a_bad_policy_is_refused_naming_the_field(workspace: Path, extra: dict[str, object],
                                                  field: str, says: str) -> None:
    _profile(workspace, **extra)
    with pytest.raises(ContractError) as err:
        Runtime.from_workspace(workspace)
    assert any(p.field == field and says in p.message for p in err.value.problems), err.value
    _, problems = validate_workspace(workspace)
    assert any(p.field == field for p in problems)


def test_every_n_in_a_profile_is_read(workspace: Path) -> None:
    _profile(workspace, fsync="every_n", fsync_every=16)
    assert Runtime.from_workspace(workspace).store.durability == Durability("every_n", 16)


def test_a_durability_value_checks_itself() -> None:
    with pytest.raises(ValueError, match="fsync must be one of"):
        Durability("sometimes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="fsync_every"):
        Durability("every_n", 0)


def test_a_workspace_with_its_own_older_profile_schema_refuses_fsync_naming_it(
        workspace: Path) -> None:
    """docs/architecture.md, "Schema evolution": the field was added to runtime_profile_v1
    in place; a workspace's own copy from before it fails closed, naming the field."""
    own = workspace / "schemas" / "runtime_profile_v1.json"
    schema = json.loads(own.read_text())
    for key in ("fsync", "fsync_every"):
        del schema["properties"][key]
    for key in ("if", "then", "dependentSchemas"):
        del schema[key]
    own.write_text(json.dumps(schema))
    assert Runtime.from_workspace(workspace).profile.fsync == "close"  # an old profile: fine
    _profile(workspace, fsync="always")
    with pytest.raises(ContractError, match="'fsync' was unexpected"):
        Runtime.from_workspace(workspace)


def test_a_short_write_is_continued_not_torn(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The log is written with os.write, which may take fewer bytes than asked (a signal, a
    nearly full disk): the writer goes on with the rest, so every line still lands whole."""
    real = os.write
    calls = []

    def dribble(fd: int, data: bytes | memoryview) -> int:
        calls.append(len(data))
        return real(fd, bytes(data[:7]))

    monkeypatch.setattr(os, "write", dribble)
    log = write_session(tmp_path / "sessions", Durability("never"), events=5)
    monkeypatch.undo()
    assert [e.payload for e in read_log(log)] == [{"n": n} for n in range(1, 6)]
    assert len(calls) > 5  # each line took several writes


def test_a_new_log_is_made_with_the_mode_open_would_give(tmp_path: Path) -> None:
    old = os.umask(0o002)
    try:
        log = write_session(tmp_path / "sessions", Durability("never"), events=1)
    finally:
        os.umask(old)
    assert stat.S_IMODE(log.stat().st_mode) == 0o664  # 0o666 less the umask, as open("ab")
