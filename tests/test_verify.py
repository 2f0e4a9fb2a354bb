"""integrity.verify_log: every tamper kind the chain (and seq, ids, session.close) can prove is
named by kind, seq and line on a copy of a real log; an untouched log passes; what a keyless
chain cannot prove passes too, and an anchored head catches it (docs/log-format.md)."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from agentos_kernel.store.events import canonical
from agentos_kernel.store.integrity import verify_log

from .helpers import REPO, Run, RunRequest

K = 18  # index of line 19, the tool.invoke of the canonical run ("Hello, Ada!")
N = 32  # events in the canonical run
Lines = list[bytes]


def rechain(lines: Lines, start: int = 0) -> Lines:
    """What anyone can do to a keyless chain: recompute every chain from `start` on."""
    out = list(lines)
    prev = orjson.loads(out[start - 1])["chain"] if start else None
    for i in range(start, len(out)):
        obj = orjson.loads(out[i])
        obj.pop("chain", None)
        obj["chain"] = prev = hashlib.sha256((prev or "").encode() + canonical(obj)).hexdigest()
        out[i] = canonical(obj) + b"\n"
    return out


def edited(lines: Lines, i: int, **fields: object) -> Lines:
    obj = orjson.loads(lines[i])
    obj.update(fields)
    return [*lines[:i], canonical(obj) + b"\n", *lines[i + 1:]]


def forged_tail(lines: Lines, type_: str, payload: dict[str, object]) -> Lines:
    """A line appended with the next seq and a chain recomputed from the real last one."""
    last = orjson.loads(lines[-1])
    forged = {**last, "id": f"{last['session_id']}-e{last['seq'] + 1:04d}", "seq": last["seq"] + 1,
              "type": type_, "actor": "user", "payload": payload, "parent_id": None}
    return rechain([*lines, canonical(forged) + b"\n"], len(lines))


def unchained_tail(lines: Lines) -> Lines:
    """A line added by hand (next seq, new id) without computing any chain."""
    obj = orjson.loads(forged_tail(lines, "event.amended", AMEND)[-1])
    del obj["chain"]
    return [*lines, canonical(obj) + b"\n"]


AMEND = {"target_id": "x", "field": "output", "value": "Goodbye", "reason": "forged"}
# name -> (tamper, kind, seq, line)
TAMPERS: dict[str, tuple[Callable[[Lines], Lines], str, int | None, int | None]] = {
    "edit one byte": (lambda ls: [*ls[:K], ls[K].replace(b"Ada", b"Adb", 1), *ls[K + 1:]],
                      "altered", 19, 19),
    "delete": (lambda ls: ls[:K] + ls[K + 1:], "removed", 19, 19),
    "delete, chain recomputed": (lambda ls: rechain(ls[:K] + ls[K + 1:], K), "removed", 19, 19),
    "delete two": (lambda ls: ls[:K] + ls[K + 2:], "removed", 19, 19),
    "swap": (lambda ls: [*ls[:K], ls[K + 1], ls[K], *ls[K + 2:]], "reordered", 20, 19),
    "move later": (lambda ls: [*ls[:K], *ls[K + 1:K + 5], ls[K], *ls[K + 5:]], "reordered", 20, 19),
    "duplicate": (lambda ls: [*ls[:K + 1], ls[K], *ls[K + 1:]], "duplicated", 19, 20),
    "duplicate at the end": (lambda ls: [*ls, ls[K]], "duplicated", 19, 33),
    "duplicate, chain recomputed": (lambda ls: rechain([*ls[:K + 1], ls[K], *ls[K + 1:]], K + 1),
                                    "duplicated", 19, 20),
    "append without chain": (unchained_tail, "forged", 33, 33),
    "append forged, chain recomputed": (lambda ls: forged_tail(ls, "tool.invoke", {"id": "t9",
                                        "name": "write_file", "args": {}}), "appended", 33, 33),
    "other session's line": (lambda ls: rechain(edited(ls, K, session_id="other"), K),
                             "bad-envelope", 19, 19),
    "garbage mid-file": (lambda ls: [*ls[:K], b"garbage\n", *ls[K + 1:]], "bad-envelope", None, 19),
    "unknown field": (lambda ls: edited(ls, K, extra=1), "bad-envelope", 19, 19),
    "id not a string": (lambda ls: edited(ls, K, id=["e19"]), "bad-envelope", 19, 19),
    "empty": (lambda ls: [], "empty-log", None, None),
    "whitespace only": (lambda ls: [b"\n", b"  \n"], "empty-log", None, None),
}


@pytest.fixture
def lines(canonical_run: Run) -> Lines:
    out = canonical_run.log_path.read_bytes().splitlines(keepends=True)
    assert len(out) == N
    return out


def write(tmp_path: Path, lines: Lines, name: str = "copy.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(b"".join(lines))
    return path


@pytest.mark.parametrize("name", sorted(TAMPERS))
def test_each_tamper_kind_is_named_by_kind_seq_and_line(lines: Lines, tmp_path: Path, name: str) -> None:
    tamper, kind, seq, line = TAMPERS[name]
    report = verify_log(write(tmp_path, tamper(lines)))
    assert not report.ok and report.problem is not None, report.verdict()
    assert (report.problem.kind, report.problem.seq, report.problem.line) == (kind, seq, line), \
        report.problem
    assert report.head is None and report.torn is None


def test_untouched_logs_verify(lines: Lines, tmp_path: Path, run_request: RunRequest) -> None:
    failed = run_request(faults="malformed_worker")
    for path in (write(tmp_path, lines), failed.log_path, REPO / "sessions/example/.events.jsonl",
                 REPO / "conformance/chain_vector.jsonl"):
        report = verify_log(path)
        last = orjson.loads(path.read_bytes().splitlines()[-1])
        assert report.ok and report.findings == (), report.verdict()
        assert report.chained and report.head == last["chain"] and report.events == last["seq"]
    assert verify_log(write(tmp_path, lines)).verdict().endswith(f"{N} events, chain intact, head "
                                                                f"{orjson.loads(lines[-1])['chain']}")


def test_any_single_byte_flip_is_caught_at_its_line_or_changes_nothing(lines: Lines,
                                                                       tmp_path: Path) -> None:
    rng = random.Random(8785)
    data = b"".join(lines)
    starts = [0]
    for ln in lines:
        starts.append(starts[-1] + len(ln))
    for _ in range(300):
        at = rng.randrange(len(data))
        flipped = data[:at] + bytes([rng.choice([b for b in range(256) if b != data[at]])]) + data[at + 1:]
        line = next(i for i in range(N) if starts[i + 1] > at) + 1
        report = verify_log(write(tmp_path, [flipped]))
        if report.ok:  # only a re-spelling of the same JSON value (e.g. \u001b as \u001B) may pass
            assert orjson.loads(flipped.splitlines()[line - 1]) == orjson.loads(lines[line - 1]), at
        else:
            assert report.findings[0].line == line, (at, report.verdict())


def test_torn_final_line_is_reported_beside_a_clean_chain(lines: Lines, tmp_path: Path) -> None:
    path = write(tmp_path, [*lines[:20], lines[20][:57]])
    report = verify_log(path)
    assert report.problem is None and not report.ok
    assert (report.torn.line, report.torn.offset, report.torn.size) == (21, sum(map(len, lines[:20])), 57)
    assert [f.kind for f in report.findings] == ["torn-tail"]
    assert report.head == orjson.loads(lines[19])["chain"] and report.events == 20
    assert "no session.close" in " ".join(report.notes)
    cut_in_a_char = [*lines[:20], "{\"x\":\"é".encode()[:-1]]  # a tear inside a UTF-8 sequence
    assert verify_log(write(tmp_path, cut_in_a_char)).torn.line == 21


def test_a_complete_last_line_without_its_newline_is_an_event(lines: Lines, tmp_path: Path) -> None:
    report = verify_log(write(tmp_path, [*lines[:-1], lines[-1].rstrip(b"\n")]))
    assert report.ok and report.events == N and report.unterminated


def test_what_a_keyless_chain_cannot_prove_an_anchored_head_can(lines: Lines, tmp_path: Path) -> None:
    head = orjson.loads(lines[-1])["chain"]
    rewritten = rechain(edited(lines, K, payload={"args": {"text": "Hello, Eve!"}, "id": "t1",
                                                  "name": "echo"}), K)
    forged_amend = forged_tail(lines, "event.amended", AMEND)
    cut = lines[:-1]
    for tampered in (rewritten, forged_amend, cut):  # the chain alone verifies each of them
        assert verify_log(write(tmp_path, tampered)).problem is None
    assert verify_log(write(tmp_path, rewritten), head).problem.kind == "head-missing"
    assert verify_log(write(tmp_path, cut), head).problem.kind == "head-missing"
    appended = verify_log(write(tmp_path, forged_amend), head).problem
    assert (appended.kind, appended.seq) == ("appended", N + 1)
    assert verify_log(write(tmp_path, lines), head).ok


def bare(lines: Lines) -> Lines:
    """The log with the eight spec fields only (no seq, no chain), as another writer's."""
    out = []
    for ln in lines:
        obj = orjson.loads(ln)
        del obj["chain"], obj["seq"]
        out.append(canonical(obj) + b"\n")
    return out


def test_a_log_without_chain_is_not_a_failure_but_says_so(lines: Lines, tmp_path: Path) -> None:
    plain = bare(lines)
    report = verify_log(write(tmp_path, plain))
    assert report.ok and not report.chained and report.head is None
    assert "no chain to verify" in report.verdict() and any("cannot be proven" in n for n in report.notes)
    dup = verify_log(write(tmp_path, [*plain, plain[K]])).problem  # ids are still checked
    assert (dup.kind, dup.line) == ("duplicated", N + 1)
