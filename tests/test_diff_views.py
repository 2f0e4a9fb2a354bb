"""A rerun's lines (id, parent_id, chain and session id differ on every line) compared a
batch of VIEWS pairs at a time by the orjson encoding of their views (runs/difflines.py
`_views_agree`), against the engine that parses every line (tests/diff_oracle): edits at and
around the batch edges, a volatile field changed on every hook (a real rerun's `ms`), A's id
in a payload (renamed), spelled with an escape, in an actor, types that Python calls equal
(`1`, `1.0`, `true`), a view nested too deep to encode, blank and bad lines."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from agentos_kernel.runs import difflines, difftext
from agentos_kernel.runs.diff import diff_events
from agentos_kernel.store.events import LogError, read_log
from agentos_kernel.store.replay.logview import LogEvents
from agentos_kernel.testing import write_long_session

from .diff_oracle import diff as old_diff
from .diff_oracle import difftext as old_text
from .test_diff_bytes import _all, _calls
from .test_diff_stream import _outcome

A, B = "s0001", "s0002"
EDGES = (0, 1, 62, 63, 64, 65, 127, 128, 1023, 1024, 1025)
DEEP = b"[" * 300 + b"]" * 300
"""A value orjson parses but will not encode (its depth limit): the batch is read as before."""


def _rerun(tmp: Path, sid: str, n: int) -> list[bytes]:
    """The lines `agentos rerun` writes under `sid`: its id inside every id and parent_id."""
    p = write_long_session(tmp / "src", sid, n)
    return p.read_bytes().replace(b'"id":"e', b'"id":"%s-e' % sid.encode()).replace(
        b'"parent_id":"e', b'"parent_id":"%s-e' % sid.encode()).splitlines(keepends=True)


def _edit(line: bytes, how: str) -> bytes:
    if how == "payload":
        return line.replace(b'"payload":{', b'"payload":{"x":1,', 1)
    if how == "float":  # equal to 1 in Python, another JSON value
        return line.replace(b'"payload":{', b'"payload":{"x":1.0,', 1)
    if how == "bool":
        return line.replace(b'"payload":{', b'"payload":{"x":true,', 1)
    if how == "id-in-payload":
        return line.replace(b'"payload":{', b'"payload":{"about":"%s",' % A.encode(), 1)
    if how == "b-id-in-payload":  # B's id where A has A's: the same view once A's is renamed
        return line.replace(b'"payload":{', b'"payload":{"about":"%s",' % B.encode(), 1)
    if how == "escaped-id":
        return line.replace(b'"payload":{', b'"payload":{"about":"\\u00730001",', 1)
    if how == "id-in-actor":
        return line.replace(b'"actor":"', b'"actor":"%s:' % A.encode(), 1)
    if how == "deep":
        return line.replace(b'"payload":{', b'"payload":{"deep":%s,' % DEEP, 1)
    if how == "type":
        return line.replace(b'"type":"', b'"type":"x.', 1)
    raise AssertionError(how)


def _write(tmp: Path, name: str, lines: list[bytes]) -> Path:
    p = tmp / name / ".events.jsonl"
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(b"".join(lines))
    return p


def _same_as_oracle(pa: Path, pb: Path) -> None:
    assert _outcome(lambda: _all(difftext.diff_logs(pa, pb), difftext)) == \
        _outcome(lambda: _all(old_text.diff_logs(pa, pb), old_text))
    renamed = _outcome(lambda: _all(diff_events(LogEvents(pa), LogEvents(pb), (A, "s0009")), difftext))
    assert renamed == _outcome(lambda: _all(
        old_diff.diff_events(list(read_log(pa)), list(read_log(pb)), (A, "s0009")), old_text))


@pytest.mark.parametrize("seed", range(40))
def test_a_rerun_compared_by_its_views_is_the_parsed_diff(tmp_path: Path, seed: int) -> None:
    rnd = random.Random(seed)
    n = rnd.choice([65, 130, 1030, rnd.randint(2, 2200)])
    a, b = _rerun(tmp_path, A, n), _rerun(tmp_path, B, n)
    hows = ("payload", "float", "bool", "id-in-payload", "b-id-in-payload", "escaped-id",
            "id-in-actor", "deep", "type", "ms", "blank", "bad")
    for how in rnd.sample(hows, rnd.randint(1, 3)):
        side = rnd.choice([a, b, "both"])
        i = min(rnd.choice((*EDGES, rnd.randrange(n))), n - 1)
        for lines in ([a, b] if side == "both" else [side]):
            assert isinstance(lines, list)
            if how == "ms":  # every hook's wall time: a volatile field, no divergence
                lines[:] = [x.replace(b'"ms":0.0', b'"ms":%d.5' % rnd.randrange(99)) for x in lines]
            elif how == "blank":
                lines.insert(i, b"\n")
            elif how == "bad":
                lines.insert(i, rnd.choice([b"{not json\n", b'{"id": "x"}\n', b"[1]\n"]))
            else:
                lines[i] = _edit(lines[i], how)
    _same_as_oracle(_write(tmp_path, "a", a), _write(tmp_path, "b", b))


@pytest.mark.parametrize("at", EDGES)
@pytest.mark.parametrize("how", ["payload", "float", "bool", "id-in-payload", "b-id-in-payload",
                                 "id-both", "type-not-str", "actor-not-str"])
def test_a_rerun_that_differs_at_a_batch_edge(tmp_path: Path, at: int, how: str) -> None:
    """One pair at a batch's edge: B's line edited, or both lines (`id-both`: A's id in both
    payloads, renamed in A's view only; `*-not-str`: both lines bad the same way)."""
    a, b = _rerun(tmp_path, A, 1100), _rerun(tmp_path, B, 1100)
    if how in ("type-not-str", "actor-not-str"):
        field = how.split("-")[0].encode()
        a[at], b[at] = (re.sub(rb'"%s":"[^"]*"' % field, b'"%s":7' % field, x) for x in (a[at], b[at]))
        with pytest.raises(LogError, match=f":{at + 1}: "):  # by the diff, not when a row is read
            diff_events(LogEvents(_write(tmp_path, "x", a)), LogEvents(_write(tmp_path, "y", b)), (A, B))
    elif how == "id-both":
        a[at], b[at] = _edit(a[at], "id-in-payload"), _edit(b[at], "id-in-payload")
    else:
        b[at] = _edit(b[at], how)
        if how == "b-id-in-payload":
            a[at] = _edit(a[at], "id-in-payload")
    _same_as_oracle(_write(tmp_path, "a", a), _write(tmp_path, "b", b))


def test_a_real_rerun_s_volatile_fields_need_no_exact_comparison(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every hook's `ms` differs (as in any rerun): the batches still agree by their views'
    encodings with the IGNORED fields dropped; neither the exact comparison nor a payload
    byte search runs (counts of calls, not a timing)."""
    from agentos_kernel.runs import diff as engine

    a = _rerun(tmp_path, A, 1500)
    b = [x.replace(b'"ms":0.0', b'"ms":3.25') for x in _rerun(tmp_path, B, 1500)]
    assert sum(b'"ms":3.25' in x for x in b) > 300
    pa, pb = _write(tmp_path, "a", a), _write(tmp_path, "b", b)
    exact, searched = _calls(monkeypatch, engine, "_payload"), _calls(monkeypatch, difflines, "payload_bytes")
    d = difftext.diff_logs(pa, pb)
    assert d.identical and d.compared == 1500 and not exact and not searched
    monkeypatch.undo()
    assert _all(d, difftext) == _all(old_text.diff_logs(pa, pb), old_text)


def test_a_rerun_s_lines_are_parsed_once_a_batch_of_views_at_a_time(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each line of both logs parsed once, VIEWS of them at once, also past a pair whose views
    are equal only once A's id is renamed (a count of calls)."""
    a, b = _rerun(tmp_path, A, 700), _rerun(tmp_path, B, 700)
    a[100], b[100] = _edit(a[100], "id-in-payload"), _edit(b[100], "b-id-in-payload")
    pa, pb = _write(tmp_path, "a", a), _write(tmp_path, "b", b)
    ea, eb = LogEvents(pa), LogEvents(pb)
    views = _calls(monkeypatch, difflines, "_views")
    parsed: list[Any] = []
    real = orjson.loads
    monkeypatch.setattr(orjson, "loads", lambda x: parsed.append(x) or real(x))
    d = diff_events(ea, eb, (A, B))
    assert d.identical and len(parsed) == 1400
    assert [len(v[0]) for v in views] == [difflines.VIEWS] * 20 + [700 % difflines.VIEWS] * 2
