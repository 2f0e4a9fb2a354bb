"""python -m runtime "hello, greet Ada" [--sessions DIR] [--session-id ID] [--snapshot FILE]"""

import argparse
from pathlib import Path

from .agents import Runtime
from .event_store import replay, write_snapshot
from .result import Err

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m runtime")
    parser.add_argument("prompt")
    parser.add_argument("--sessions", type=Path, default=ROOT / "sessions")
    parser.add_argument("--session-id")
    parser.add_argument("--snapshot", type=Path, help="write the replay snapshot here")
    args = parser.parse_args()
    runtime = Runtime(ROOT, args.sessions)
    result = runtime.handle_user_request(args.prompt, session_id=args.session_id)
    for event in runtime.events.read_all(runtime.session_id):
        print(f"{event.type:18} {event.actor:26} {str(event.payload)[:60]}")
    if args.snapshot:
        write_snapshot(args.snapshot, replay(runtime.events, runtime.session_id))
    return 1 if isinstance(result, Err) else 0


if __name__ == "__main__":
    raise SystemExit(main())
