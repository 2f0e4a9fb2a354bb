"""verify's fast path (integrity_scan.Scan.run) against the general one (integrity.FAST off:
every line through `Scan.line`, the checks as they were before the fast path existed) under
the edits a forger makes: a key held twice (at the top or deep in the payload), keys renamed,
added or reordered, whitespace, unicode escapes, numbers spelled another way, a ts that is a
number, a broken chain, a bad seq, each line's chain then recomputed over its own bytes (what
anyone can do to a keyless chain, and exactly what the fast path hashes). Both must report the
same findings, notes and head; a log that verifies gets the one-pass summary that the summary's
own pass gives (`Runtime.verified_summary` against `replay_summary`). Issue 24."""

from __future__ import annotations

import contextlib
import hashlib
import re
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentos_kernel.kernel import Runtime
from agentos_kernel.store.events import canonical
from agentos_kernel.store.integrity import verify_lines, verify_log
from agentos_kernel.store.integrity_scan import Scan
from agentos_kernel.store.replay.summary import _BoundedFold
from agentos_kernel.testing import write_long_session

from .helpers import Run
from .test_verify import AMEND, Lines, edited, forged_tail, rechain
from .test_verify_bounded import _general, _rising, _with_ids


def forge_chains(data: Lines, start: int, over: str = "bytes") -> Lines:
    """Each line's chain from `start` on recomputed, the line's bytes kept: over those bytes, its
    chain member cut out (`bytes`: what the fast path hashes), or over the canonical encoding of
    the values they spell (`values`: what the writer hashes); stops at a line without a chain."""
    out = list(data)
    prev = b""
    if start:
        at = out[start - 1].find(b',"chain":"')
        prev = out[start - 1][at + 10:at + 74] if at > 0 else b""
    for k in range(start, len(out)):
        line = out[k]
        at = line.find(b',"chain":"')
        if at <= 0 or not line.endswith(b"\n"):
            break
        if over == "bytes":
            body = line[:at] + line[at + 75:-1]
        else:
            try:
                obj = orjson.loads(line)
                obj.pop("chain")
                body = canonical(obj)
            except (orjson.JSONDecodeError, orjson.JSONEncodeError, KeyError, TypeError, AttributeError):
                break
        prev = hashlib.sha256(prev + body).hexdigest().encode()
        out[k] = line[:at + 10] + prev + line[at + 74:]
    return out


def _flip_chain(b: bytes) -> bytes:
    at = b.index(b'"chain":"') + 9
    return b[:at] + (b"1" if b[at:at + 1] == b"0" else b"0") + b[at + 1:]


def _exponent(m: re.Match[bytes]) -> bytes:
    """0.001227 as 1227e-6: the same decimal, so the same double."""
    whole, _, frac = m[1].partition(b".")
    return b'"cost_usd":%de-%d' % (int(whole + frac), len(frac))


EDITS = {  # a line's bytes -> the forger's bytes (ValueError: the edit does not apply to it)
    "dupkey": lambda b: b.replace(b'{"actor":', b'{"actor":"x","actor":', 1),
    "dupkey-deep": lambda b: b.replace(b'"payload":{"', b'"payload":{"a":0,"a":1,"', 1),
    "dupkey-same-value": lambda b: b.replace(b'"schema_version":"v1","seq"',
                                             b'"schema_version":"v1","schema_version":"v1","seq"', 1),
    "dupkey-number": lambda b: re.sub(rb'"seq":(\d+),', rb'"seq":1e0,"seq":\1,', b, count=1),
    "space": lambda b: b.replace(b'":', b'": ', 1),
    "space-end": lambda b: b[:-1] + b" \n",
    "crlf": lambda b: b[:-1] + b"\r\n",
    "escape": lambda b: b.replace(b'{"actor":"', b'{"actor":"\\u0020', 1),
    "escape-same-value": lambda b: b.replace(b'"schema_version":"v1"',
                                             b'"schema_version":"\\u0076\\u0031"', 1),
    "escape-slash": lambda b: b.replace(b'"type":"', b'"type":"\\/', 1),
    "reorder": lambda b: orjson.dumps(dict(reversed(orjson.loads(b).items()))) + b"\n",
    "reorder-deep": lambda b: b.replace(b'"payload":{"', b'"payload":{"zz":0,"aa":1,"', 1),
    "float-exponent": lambda b: re.sub(rb'"cost_usd":([0-9]+\.[0-9]+)', _exponent, b, count=1),
    "seq-float": lambda b: re.sub(rb'"seq":(\d+),', rb'"seq":\1.0,', b, count=1),
    "seq-bool": lambda b: re.sub(rb'"seq":(\d+),', rb'"seq":true,', b, count=1),
    "ts-number": lambda b: b[:b.index(b'"ts":"')] + b'"ts":1767225600.0' + b[b.index(b'","type"') + 1:],
    "rename": lambda b: b.replace(b'"parent_id":', b'"parent_iz":', 1),
    "extra": lambda b: b[:-2] + b',"zzz":1}\n',
    "drop": lambda b: b.replace(b',"schema_version":"v1"', b"", 1),
    "chain-flip": _flip_chain,
    "session": lambda b: b.replace(b'"session_id":"', b'"session_id":"x', 1),
    "id": lambda b: b.replace(b'"id":"', b'"id":"x', 1),
    "type-close": lambda b: b[:b.index(b',"type":"')] + b',"type":"session.close"}\n',
}
FORGE = st.sampled_from(["none", "bytes", "values"])
MOVE = st.sampled_from(["none", "copy", "delete", "swap", "renumber"])
_OPS = st.lists(st.tuples(st.sampled_from(sorted(EDITS)), st.integers(0, 40), FORGE, MOVE,
                          st.integers(0, 40)),
                min_size=1, max_size=3)
Ops = list[tuple[str, int, str, str, int]]


def _tamper(data: Lines, ops: Ops) -> Lines:
    for edit, a, forge, move, b in ops:
        i, j = a % len(data), b % len(data)
        if move == "copy":
            data = [*data[:j], data[i], *data[j:]]
        elif move == "delete" and len(data) > 1:
            data = data[:j] + data[j + 1:]
        elif move == "swap":
            data[i], data[j] = data[j], data[i]
        elif move == "renumber":
            data[i] = data[i].replace(b'"seq":', b'"seq":%d,"seq":' % (j + 1), 1)
            data[i] = orjson.dumps(orjson.loads(data[i]), option=orjson.OPT_SORT_KEYS) + b"\n"
        i = i % len(data)
        with contextlib.suppress(ValueError):  # the edit's anchor is not in this line
            data[i] = EDITS[edit](data[i])
        if forge != "none":
            data = forge_chains(data, i, forge)
    return data


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_the_fast_path_reports_what_the_general_path_does_under_forgery(
        canonical_run: Run, monkeypatch: pytest.MonkeyPatch, ops: Ops) -> None:
    log = canonical_run.log_path.read_bytes().splitlines(keepends=True)
    for base in (log, _with_ids(log, _rising(len(log)))):  # the writer's ids, rising ids
        data = _tamper(list(base), ops)
        assert verify_lines(data, Path("x.jsonl")).to_dict() == _general(monkeypatch, data)


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_each_forgery_alone_is_named_as_the_general_path_names_it(
        canonical_run: Run, monkeypatch: pytest.MonkeyPatch, edit: str) -> None:
    log = canonical_run.log_path.read_bytes().splitlines(keepends=True)
    for k in (0, 6, 18, 31):  # session.start, a transition, the tool call, session.close
        for forge in ("none", "bytes", "values"):
            data = _tamper(list(log), [(edit, k, forge, "none", 0)])
            fast = verify_lines(data, Path("x.jsonl")).to_dict()
            assert fast == _general(monkeypatch, data), (edit, k, forge)
            if edit.startswith("dupkey") and data[k] != log[k]:  # never passes, chained or not
                assert not fast["ok"] and fast["findings"][0]["kind"] in ("duplicate-key", "altered")
                assert forge == "none" or fast["findings"][0]["kind"] == "duplicate-key"
            if edit.endswith("same-value") and not edit.startswith("dupkey") and forge == "values":
                assert fast["ok"] and any("another spelling" in n for n in fast["notes"]), fast


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_a_log_that_verifies_gets_the_summarys_own_summary(
        canonical_run: Run, ops: Ops) -> None:
    rt: Runtime = canonical_run.rt
    path = canonical_run.log_path
    kept = path.with_name("untouched")
    if not kept.exists():
        kept.write_bytes(path.read_bytes())
    data = _tamper(kept.read_bytes().splitlines(keepends=True), ops)
    path.write_bytes(b"".join(data))
    report, summary = rt.verified_summary(canonical_run.session_id)
    if report.ok:
        assert summary is not None and summary == rt.replay_summary(canonical_run.session_id)
    else:
        assert summary is None


@pytest.mark.parametrize("width", [1, 2, 3, 4])
def test_the_writers_ids_of_any_width_across_thousands(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        width: int) -> None:
    # Scan.run makes the writer's id of seq s as a start shared by a thousand seqs plus its last
    # three digits (integrity_seen.thousand_ids); below 1000 at 1 or 2 digits, whole.
    lines = write_long_session(tmp_path, "w", 2100).read_bytes().splitlines(keepends=True)
    data = _with_ids(lines, [f"e{k:0{width}d}" for k in range(1, len(lines) + 1)])
    report = verify_lines(data, Path("x.jsonl")).to_dict()
    assert report["ok"] and report == _general(monkeypatch, data)
    # Line `at` carries the id of line `of`: a copy (a stale start of a thousand would take it).
    for at, of in ((10, 9), (100, 99), (1000, 999), (1002, 1001), (2000, 1000), (2001, 1001), (2050, 2049)):
        copy = rechain(edited(data, at - 1, id=f"e{of:0{width}d}"), at - 1)
        found = verify_lines(copy, Path("x.jsonl")).to_dict()
        assert found == _general(monkeypatch, copy)
        assert (found["findings"][0]["kind"], found["findings"][0]["line"]) == ("duplicated", at)
        assert f"first written at line {of}" in found["findings"][0]["message"]
    # An id that is only the writer's digits ("005", not "e5"/"e005") is kept, and its copy found.
    other = rechain(edited(edited(data, 4, id="005"), 6, id="005"), 4)
    found = verify_lines(other, Path("x.jsonl")).to_dict()
    assert found == _general(monkeypatch, other) and found["findings"][0]["line"] == 7


# Scan.run takes a line only when an earlier line had its actor (whose canonical bytes begin the
# line: the chain member is cut out after them) and its type, never a session.close or what
# follows one; the bytes before a torn tail are summed again from the lines read again.
ACTORS = ["user", 'a"b', "\u00e9t\u00e9", "back\\slash", "x\u2028y", "\U0001f600", "", "tab\t", "hook:(none)"]


def _actors(data: Lines, actors: list[str]) -> Lines:
    out = [orjson.loads(x) for x in data]
    for k, obj in enumerate(out):
        obj["actor"] = actors[k % len(actors)]
    return rechain([canonical(obj) + b"\n" for obj in out])


def _general_lines(data: Lines) -> int:
    """How many lines of `data` verify_lines checks the general way (Scan.line)."""
    calls = []
    with pytest.MonkeyPatch.context() as m:
        m.setattr(Scan, "line", lambda self, n, obj, raw, f=Scan.line: (calls.append(n),
                                                                        f(self, n, obj, raw)))
        verify_lines(data, Path("x.jsonl"))
    return len(calls)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=_OPS)
def test_actors_in_any_spelling_are_cut_out_as_the_general_path_cuts_them(
        canonical_run: Run, monkeypatch: pytest.MonkeyPatch, ops: Ops) -> None:
    log = _actors(canonical_run.log_path.read_bytes().splitlines(keepends=True), ACTORS)
    assert verify_lines(log, Path("x.jsonl")).ok
    data = _tamper(list(log), ops)
    assert verify_lines(data, Path("x.jsonl")).to_dict() == _general(monkeypatch, data)


def test_the_fast_path_takes_every_line_whose_actor_and_type_were_seen(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = write_long_session(tmp_path, "w", 2100).read_bytes().splitlines(keepends=True)
    firsts = len({orjson.loads(x)["actor"] for x in lines} | {orjson.loads(x)["type"] for x in lines})
    assert _general_lines(lines) <= firsts + 2  # each first seen, session.close, the first line
    many = _actors(lines, [f"a{k}" for k in range(300)])  # more actors than a Scan remembers
    assert verify_lines(many, Path("x.jsonl")).to_dict() == _general(monkeypatch, many)
    assert _general_lines(many) >= 256 + sum(k % 300 >= 256 for k in range(2100))  # not remembered
    odd = _actors(lines, ACTORS)
    assert verify_lines(odd, Path("x.jsonl")).to_dict() == _general(monkeypatch, odd)
    assert _general_lines(odd) <= firsts + len(ACTORS) + 2


def test_what_follows_a_session_close_goes_the_general_way(canonical_run: Run,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    log = canonical_run.log_path.read_bytes().splitlines(keepends=True)
    for type_, kind in (("event.amended", None), ("llm.request", "appended"), ("hook.fired", "appended")):
        data = list(log)
        for _ in range(3):  # three lines after the close, each chained over its own bytes
            data = forged_tail(data, type_, AMEND)
        found = verify_lines(data, Path("x.jsonl")).to_dict()
        assert found == _general(monkeypatch, data)
        assert (found["findings"][0]["kind"] if found["findings"] else None) == kind, found


def test_a_torn_tail_after_the_fast_path_is_placed_where_it_begins(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    lines = write_long_session(tmp_path, "t", 3000).read_bytes().splitlines(keepends=True)
    data = [*lines[:-1], lines[-1][:40]]
    path = tmp_path / "torn.jsonl"
    path.write_bytes(b"".join(data))
    want = {"line": 3000, "offset": sum(map(len, lines[:-1])), "size": 40}
    for report in (verify_log(path), verify_lines(data, path), verify_lines(iter(data), path)):
        assert report.torn is not None and report.events == 2999 and report.problem is None
        assert {"line": report.torn.line, "offset": report.torn.offset, "size": report.torn.size} == want
    assert verify_lines(data, Path("x.jsonl")).to_dict() == _general(monkeypatch, data)


def test_each_sees_every_event_in_order_and_takes_no_fold_beside_it(tmp_path: Path) -> None:
    lines = write_long_session(tmp_path, "e", 2100).read_bytes().splitlines(keepends=True)
    seen: list[int] = []
    assert verify_lines(lines, Path("x.jsonl"), each=lambda e: seen.append(e["seq"])).ok
    assert seen == list(range(1, 2101))
    with pytest.raises(ValueError, match="not both"):
        verify_lines(lines, Path("x.jsonl"), each=print, fold=_BoundedFold(3))


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_each_forgery_on_a_line_the_fast_path_takes_is_named_as_the_general_path_names_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, edit: str) -> None:
    # Lines 41 and 71 of a long session: their actor and type were seen before, so Scan.run
    # reads them (the seq, session id and writer's id it writes into what it read, then
    # compares the canonical encoding with the line: a forged one of them is named as before).
    log = write_long_session(tmp_path, "w", 100).read_bytes().splitlines(keepends=True)
    for k in (40, 70):
        for forge in ("none", "bytes", "values"):
            data = _tamper(list(log), [(edit, k, forge, "none", 0)])
            fast = verify_lines(data, Path("x.jsonl")).to_dict()
            assert fast == _general(monkeypatch, data), (edit, k, forge)


def test_the_fast_loop_reads_the_ten_fields_by_the_key_objects_orjson_gives(tmp_path: Path) -> None:
    # Scan.run's getter takes its keys from a line that checked out: orjson gives the same str
    # object for a key each time, and a lookup by that object skips comparing characters. Any
    # dict is read the same (an equal key of another object is found too).
    from agentos_kernel.store.integrity_seen import TEN, ten_fields

    lines = write_long_session(tmp_path, "k", 40).read_bytes().splitlines(keepends=True)
    last, other = orjson.loads(lines[5]), orjson.loads(lines[30])
    getter = ten_fields(last)
    keys = getter.__reduce__()[1]
    assert keys == TEN
    assert all(any(k is j for j in other) for k in keys)  # the very objects orjson hands out
    assert getter(other) == tuple(other[k] for k in TEN)
    assert ten_fields(None)({k: k for k in TEN}) == TEN  # no line yet: the literals
