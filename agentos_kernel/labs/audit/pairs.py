"""Requests and their answers, one event at a time: every llm.request answered once
(llm.response or llm.error), every tool.invoke by one tool.result, by parent_id when the
answer has one, else by call id, else in order. Only the requests not answered yet are kept
(the exact way, after `Exact`, also keeps every answered request's id).
"""

from __future__ import annotations

from typing import Any

from .ids import FullIds
from .model import Gap


class Exact(Exception):
    """What the one pass does not keep the state to answer: audit the exact way (fold.py)."""


_Ask = tuple[str, int, int, dict[str, Any]]
"""An open request: its id, seq, line and payload (a tuple: one is made for every request)."""


class Pairs:
    """One request type and its answers: the open requests, and the gaps so far."""

    def __init__(self, ask: str, answers: tuple[str, ...], key: str, check: str, fix: str,
                 full: FullIds | None) -> None:
        self.ask, self.answers, self.key, self.check, self.fix = ask, answers, key, check, fix
        self.full = full
        self.open: dict[int, _Ask] = {}  # position -> request, in log order
        self.open_ids: dict[str, int] = {}  # the streaming pass: id -> position (ids are unique)
        self.answered: dict[str, str] = {}  # the exact way: request id -> its first answer's name
        self.gaps: list[Gap] = []

    def request(self, typ: str, eid: str, pid: str | None, p: dict[str, Any], seq: int, n: int,
                pos: int) -> None:
        self.open[pos] = (eid, seq, n, p)
        if self.full is None:
            self.open_ids[eid] = pos

    def answer(self, typ: str, eid: str, pid: str | None, p: dict[str, Any], seq: int, n: int,
               pos: int) -> None:
        full, key, ask = self.full, self.key, self.ask
        if pid is not None and full is None:
            tpos = self.open_ids.pop(pid, None)
            if tpos is None:  # answers something not open: only a log with a gap does
                raise Exact
            target = self.open.pop(tpos)
            mine = p.get(key)
            if mine is not None and (theirs := target[3].get(key)) is not None and mine != theirs:
                self._compare(mine, theirs, self._name(target), typ, seq, n)
            return
        name = f"{typ} (seq {seq})"
        if pid is not None and full is not None:
            s = full.last.get(pid)
            if s is None:
                return  # check_parents names the dangling parent_id
            if s.type != ask:
                self.gaps.append(Gap(self.check, seq, n, f"{typ} answers {s.name()}, which is not a "
                                                         f"{ask}; its parent_id must be the {ask}'s id"))
                return
            if self._twice(pid, s.name(), seq, n):
                return
            self.answered[pid] = name
            self.open.pop(s.pos, None)
            self._compare(p.get(key), s.keys[0 if key == "call_id" else 1], s.name(), typ, seq, n)
            return
        tpos = self._match(p)
        if tpos is None:
            self.gaps.append(Gap(self.check, seq, n, f"{typ} answers no {ask}: there is no unanswered "
                                                     f"{ask} before it; {self.fix}"))
            return
        target = self.open[tpos]
        if full is not None and self._twice(target[0], self._name(target), seq, n):
            return
        self._close(tpos, target, name, p, typ, seq, n)

    def _close(self, tpos: int, target: _Ask, name: str, p: dict[str, Any], typ: str, seq: int,
               n: int) -> None:
        if self.full is None:
            del self.open_ids[target[0]]
        else:
            self.answered[target[0]] = name
        del self.open[tpos]
        self._compare(p.get(self.key), target[3].get(self.key), self._name(target), typ, seq, n)

    def _name(self, target: _Ask) -> str:
        return f"{self.ask} (seq {target[1]})"

    def _twice(self, tid: str, tname: str, seq: int, n: int) -> bool:
        first = self.answered.get(tid)
        if first is not None:
            self.gaps.append(Gap(self.check, seq, n, f"{tname} is answered twice (first by {first}); "
                                                     f"one {self.ask}, one answer"))
        return first is not None

    def _compare(self, mine: Any, theirs: Any, tname: str, typ: str, seq: int, n: int) -> None:
        if mine is not None and theirs is not None and mine != theirs:
            self.gaps.append(Gap(self.check, seq, n, f"{typ} has {self.key} {mine!r} but answers "
                                                     f"{tname} with {self.key} {theirs!r}"))

    def _match(self, p: dict[str, Any]) -> int | None:
        """Without parent_id: the open request with the same call id, else with the same tool
        name, else the latest open one (a sequential runtime answers a call before it makes
        the next, so an unanswered call is then named, not the one after it)."""
        for field in (self.key, "name"):
            value = p.get(field)
            if value is not None:
                same = [k for k, r in self.open.items() if r[3].get(field) == value]
                if same:
                    return same[-1]
        return next(reversed(self.open)) if self.open else None

    def finish(self) -> list[Gap]:
        """The gaps, then one for each request never answered."""
        for rid, rseq, rline, rp in self.open.values():
            if rid in self.answered:
                continue
            what = rp.get("name") or rp.get("role") or ""
            asked = f"{self.ask}{f' {what}' if what else ''}"
            self.gaps.append(Gap(self.check, rseq, rline, f"{asked} has no "
                                                            f"{' or '.join(self.answers)}; {self.fix}"))
        return self.gaps
