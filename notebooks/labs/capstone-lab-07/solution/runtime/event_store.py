"""L4: append-only .events.jsonl per session, and replay (a pure fold)."""

import json
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from uuid import uuid4


@dataclass
class Event:
    id: str
    session_id: str
    ts: float
    type: str
    actor: str
    payload: dict
    schema_version: str = "v1"
    parent_id: str | None = None


class EventStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def append(self, session_id: str, type: str, actor: str, payload: dict,
               parent_id: str | None = None) -> Event:
        event = Event(id=str(uuid4()), session_id=session_id, ts=time.time(), type=type,
                      actor=actor, payload=payload, parent_id=parent_id)
        session_dir = self.root / session_id
        session_dir.mkdir(parents=True, exist_ok=True)
        with (session_dir / ".events.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(asdict(event), ensure_ascii=False) + "\n")
        return event

    def read_all(self, session_id: str) -> list[Event]:
        path = self.root / session_id / ".events.jsonl"
        with path.open(encoding="utf-8") as f:
            return [Event(**json.loads(line)) for line in f if line.strip()]


def replay(events: EventStore, session_id: str) -> dict:
    snap = {"closed": False, "output": None, "cost": {"input": 0, "output": 0},
            "agents": {}, "tools_invoked": []}
    for event in events.read_all(session_id):
        if event.type == "llm.response":
            usage = event.payload.get("usage", {})
            snap["cost"]["input"] += usage.get("input_tokens", 0)
            snap["cost"]["output"] += usage.get("output_tokens", 0)
        elif event.type == "tool.invoke":
            snap["tools_invoked"].append(event.payload)
        elif event.type == "agent.transition":
            snap["agents"][event.actor] = event.payload.get("to")
        elif event.type == "worker.report":
            snap["output"] = event.payload.get("output")
        elif event.type == "session.close":
            snap["closed"] = True
    return snap


def write_snapshot(path: Path, snapshot: dict) -> None:
    Path(path).write_text(json.dumps(snapshot, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
