"""The log diff's lockstep walk over stored line bytes (runs/difflines.py) against the engine
that parses every line (tests/diff_oracle), on pairs shaped as a copy, a rerun (the session
id changed on every line) and a fork, with the bytes that would fool a byte comparison:
A's id inside a payload, spelled with a `\\u` escape, as a key, a volatile field changed, blank
lines, lines that are not canonical, and a bad line."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentos_kernel.runs import difflines, difftext
from agentos_kernel.runs.diff import diff_events
from agentos_kernel.runs.diffrows import DiffRows
from agentos_kernel.store.events import read_log
from agentos_kernel.store.replay.logview import LogEvents
from agentos_kernel.testing import write_long_session

from .diff_oracle import diff as old_diff
from .diff_oracle import difftext as old_text
from .test_diff_stream import _head, _outcome, _rows

A, B = "s0001", "s0002"
"""Session ids as `agentos run` names them (short ids like `sa` occur inside words: `usage`)."""
EDITS = ("id-in-payload", "id-both", "escaped-id", "id-as-key", "ms", "blank", "spaces", "bad",
         "payload", "fork", "end", "id-in-actor")


def _edit(lines: list[bytes], rnd: random.Random, how: str, sid: str) -> list[bytes]:
    out = list(lines)
    i = rnd.randrange(len(out))
    line = out[i]
    if how == "id-in-payload":  # A's id as a whole value: renamed, so a byte-equal pair differs
        out[i] = line.replace(b'"payload":{', b'"payload":{"about":"%s",' % sid.encode(), 1)
    elif how == "escaped-id":  # A's id spelled with an escape: no bytes of it to find
        out[i] = line.replace(b'"payload":{', b'"payload":{"about":"\\u00730001",', 1)
    elif how == "id-as-key":  # keys are not renamed
        out[i] = line.replace(b'"payload":{', b'"payload":{"%s":1,' % sid.encode(), 1)
    elif how == "id-in-actor":
        out[i] = line.replace(b'"actor":"', b'"actor":"%s:' % sid.encode(), 1)
    elif how == "ms":  # a volatile field: no divergence
        hooks = [k for k, x in enumerate(out) if b'"type":"hook.fired"' in x]
        if hooks:
            k = rnd.choice(hooks)
            out[k] = out[k].replace(b'"ms":0.0', b'"ms":12.5', 1)
    elif how == "blank":
        out.insert(i, b"\n")
    elif how == "spaces":  # the same event, not canonical
        out[i] = orjson.dumps(orjson.loads(line)).replace(b'","', b'", "') + b"\n"
    elif how == "bad":
        out.insert(i, rnd.choice([b"{not json\n", b'{"id": "x", "no": "envelope"}\n', b"[1]\n"]))
    elif how == "payload":
        out[i] = line.replace(b'"payload":{', b'"payload":{"x":%s,' % rnd.choice([b"1", b"1.0", b"true"]), 1)
    elif how == "fork":
        out.insert(i, line.replace(b'"type":"', b'"type":"session.forked', 1))
    elif how == "end":
        del out[max(i, 1):]
    return out


def _pair(tmp: Path, seed: int) -> tuple[Path, Path]:
    rnd = random.Random(seed)
    n = rnd.choice([2, 5, 64, 300, 1023, 1024, 1025, rnd.randint(2, 2500)])
    a = write_long_session(tmp / "src", A, n).read_bytes().splitlines(keepends=True)
    shape = rnd.choice(["copy", "renamed", "renamed", "rechained"])
    if shape == "copy":  # byte for byte: the same session id, no rename
        b = list(a)
    elif shape == "renamed":  # the session id changed on every line (bench_widgets' copy)
        b = [x.replace(b'"session_id":"s0001"', b'"session_id":"s0002"') for x in a]
    else:  # written under B's id: the chain differs too
        b = write_long_session(tmp / "src", B, n).read_bytes().splitlines(keepends=True)
    for how in ([] if seed % 5 == 0 else rnd.sample(EDITS, rnd.randint(1, 3))):
        both = how == "id-both" or rnd.random() < 0.3
        how = "id-in-payload" if how == "id-both" else how
        if both or rnd.random() < 0.4:
            a = _edit(a, random.Random(seed * 7), how, A)
        if both or rnd.random() >= 0.4:
            b = _edit(b, random.Random(seed * 7), how, A if rnd.random() < 0.5 else B)
    paths = []
    for name, lines in (("a", a), ("b", b)):
        p = tmp / name / ".events.jsonl"
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"".join(lines))
        paths.append(p)
    return paths[0], paths[1]


def _calls(monkeypatch: pytest.MonkeyPatch, owner: Any, name: str) -> list[tuple[Any, ...]]:
    """The calls of `owner.name` from now on (their arguments), each still made."""
    calls: list[tuple[Any, ...]] = []
    real = getattr(owner, name)

    def counted(*args: Any) -> Any:
        calls.append(args)
        return real(*args)

    monkeypatch.setattr(owner, name, counted)
    return calls


def _all(d: Any, text: Any) -> Any:
    return (_head(d), _rows(d), text.verdict(d), text.diff_lines(d), text.diff_lines(d, True),
            text.usage_lines(d))


@pytest.mark.parametrize("seed", range(80))
def test_the_byte_walk_is_the_parsed_diff(tmp_path: Path, seed: int) -> None:
    pa, pb = _pair(tmp_path, seed)
    new = _outcome(lambda: _all(difftext.diff_logs(pa, pb), difftext))
    assert new == _outcome(lambda: _all(old_text.diff_logs(pa, pb), old_text))
    # A's id read as a third one (what %diff does for a session folder copied under a new name)
    renamed = _outcome(lambda: _all(diff_events(LogEvents(pa), LogEvents(pb), (A, "s0009")), difftext))
    assert renamed == _outcome(lambda: _all(
        old_diff.diff_events(list(read_log(pa)), list(read_log(pb)), (A, "s0009")), old_text))


@pytest.mark.parametrize(("xa", "xb", "same"), [
    (b'{"p":"sa","session_id":"sa"}', b'{"p":"sa","session_id":"sb"}', False),  # A's id twice
    (b'{"p":1,"session_id":"sa"}', b'{"p":1,"session_id":"sa"}', True),  # a copied session folder
    (b'{"p":{"session_id":"sa"},"session_id":"zz"}', b'{"p":{"session_id":"sa"},"session_id":"zz"}',
     False),  # A's id once, in the payload: renamed in A's view
    (b'{"p":"\\u0073a","session_id":"sa"}', b'{"p":"\\u0073a","session_id":"sb"}', False),  # escaped
    (b'{"p":1,"session_id":"sa"}', b'{"p":1,"session_id":"sb"}', True),
    (b'{"p":1,"session_id":"xsa"}', b'{"p":1,"session_id":"xsa"}', False),  # A's id inside a word
    (b'{"p":1,"session_id":"zz"}', b'{"p":1,"session_id":"zz"}', True),  # no A's id: unchanged
    (b'{"p":1,"session_id":"sa"}', b'{"p":2,"session_id":"sb"}', False),
])
def test_the_byte_rule_says_same_only_where_it_is_exact(xa: bytes, xb: bytes, same: bool) -> None:
    sid = orjson.loads(xa)["session_id"]
    assert difflines.byte_rule(("sa", "sb"))(xa, xb, sid, True) is same
    assert difflines.byte_rule(("s/a", "sb"))(xa, xb, sid, True) is False  # an id JSON may escape
    assert difflines.byte_rule(None)(xa, xa, sid, True) is True


@pytest.mark.parametrize("shape", ["renamed", "same id"])
def test_a_renamed_copy_parses_only_a_s_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              shape: str) -> None:
    """A log and its copy under another session id (or byte for byte, its folder renamed): B's
    lines are decided by their bytes and none is parsed (its llm.response lines fold as A's:
    they differ only in the session_id) — a count, not a timing."""
    parsed = _calls(monkeypatch, difflines, "_row")
    pa = write_long_session(tmp_path, A, 1500)
    pb = tmp_path / B / ".events.jsonl"
    pb.parent.mkdir()
    if shape == "renamed":
        pb.write_bytes(pa.read_bytes().replace(b'"session_id":"s0001"', b'"session_id":"s0002"'))
    else:
        pb.write_bytes(pa.read_bytes())
    d = diff_events(LogEvents(pa), LogEvents(pb), (A, B))
    assert d.identical and d.compared == 1500
    assert not parsed
    assert d.roles == difftext.diff_logs(pa, pa).roles and d.roles[0].calls[1] > 0


LINES = [
    b'{"actor":"a","chain":{"x":1,"payload":5},"payload":1,"schema_version":"v1"}',  # nested first
    b'{"actor":"a","chain":["payload"],"payload":5,"schema_version":"v1"}',
    b'{"actor":"a","payload":1,"schema_version":"v1","payload":2}',  # a later top-level payload
    b'{"actor":"a","payload":5,"schema_version":"v1","x":{"payload":7}}',
    b'{"actor":"a","payload":5,"schema_version":"v1","x":[1]}',
    b'{"actor":"a","payload":{"k":2,"schema_version":"v1"}}',  # the last one nested
    b'{"actor":"a","payload":[{"k":2,"schema_version":"v2"}]}',
    b'{"payload":9,"actor":"a","payload":1,"schema_version":"v1"}',  # the first one overridden
    b'{"actor":"b","payload":1,"schema_version":"v2"}',
    b'{"actor":"a","payload":1,"x":{"payload":2},"schema_version":"v1"}',
    b'{"actor":"a","payload":1.0,"schema_version":"v1"}',
    b'{"actor":"a","payload":true,"schema_version":"v1"}',
    b'{"actor":"a,","payload":5,"schema_version":"v1"}',
    b'{"actor":"a","payload":{"p":[1,{"q":"}"}]},"schema_version":"v1","seq":1}',
    b'{"actor":"x","payload":{"p":[1,{"q":"}"}]},"schema_version":"v3","seq":2}',
]


def test_equal_payload_bytes_are_equal_payloads() -> None:
    """Wherever `payload_bytes` tells two lines' payload bytes, equal bytes are equal payloads
    (types included); where a byte search could be fooled it tells none."""
    told = {k: difflines.payload_bytes(x) for k, x in enumerate(LINES)}
    assert [k for k, v in told.items() if v is None] == [0, 1, 2, 3, 4, 5, 6]
    for i, x in enumerate(LINES):
        for j, y in enumerate(LINES):
            if told[i] is not None and told[i] == told[j]:
                assert orjson.dumps(orjson.loads(x)["payload"]) == orjson.dumps(orjson.loads(y)["payload"])
                assert type(orjson.loads(x)["payload"]) is type(orjson.loads(y)["payload"])
    assert told[7] == told[8] == b"1" and told[9] == b'1,"x":{"payload":2}' and told[13] == told[14]


def test_a_rerun_s_lines_are_compared_by_their_payload_bytes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A rerun's log (ids, chain and session id differ on every line, the payloads do not): no
    pair goes to the exact comparison — a count of calls, not a timing."""
    from agentos_kernel.runs import diff as engine

    exact = _calls(monkeypatch, engine, "_payload")
    logs = []
    for sid in (A, B):
        p = write_long_session(tmp_path, sid, 1500)
        p.write_bytes(p.read_bytes().replace(b'"id":"e', b'"id":"%s-e' % sid.encode())
                      .replace(b'"parent_id":"e', b'"parent_id":"%s-e' % sid.encode()))
        logs.append(p)
    d = difftext.diff_logs(*logs)
    assert d.identical and d.compared == 1500 and not exact
    assert _all(d, difftext) == _all(old_text.diff_logs(*logs), old_text)


def test_a_table_window_reads_its_events_a_batch_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """LogDiff's table of 500 rows builds them with `DiffRows.window`: the same rows as one by
    one, without reading an event a line at a time in the agreeing prefix (a count)."""
    from agentos_kernel.jupyter.widgets.diffview import rows_html

    pa, pb = write_long_session(tmp_path, A, 1200), write_long_session(tmp_path, B, 1200)
    lines = pb.read_bytes().splitlines(keepends=True)
    lines[900] = lines[900].replace(b'"actor":"', b'"actor":"x', 1)  # a tail after row 900
    pb.write_bytes(b"".join(lines))
    d = difftext.diff_logs(pa, pb)
    for lo, hi in ((0, 0), (0, 1200), (850, 950), (899, 901), (1100, 1200), (3, 4)):
        assert d.rows.window(lo, hi) == [d.rows[i] for i in range(lo, hi)]
    reads = _calls(monkeypatch, LogEvents, "__getitem__")
    html = rows_html(d, window=500, around=500)
    assert html.count("<tr class=") == 500 and not reads
    monkeypatch.setattr(DiffRows, "window", lambda self, lo, hi: [self[i] for i in range(lo, hi)])
    assert html == rows_html(d, window=500, around=500) and len(reads) == 1000
