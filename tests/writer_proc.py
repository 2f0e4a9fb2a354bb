"""A separate writer process for tests/test_concurrency.py (run as a script, not collected).

    python writer_proc.py run WORKSPACE PROFILE N   ready, wait for a line, run N requests,
                                                    print their session ids (JSON)
    python writer_proc.py hold WORKSPACE SID        open SID, ready, wait for a line, close it
    python writer_proc.py crash WORKSPACE SID       open SID, ready, then die by SIGKILL

"ready" is one JSON line on stdout with the pid; a line on stdin is the start signal, so
the test can start all of them at the same instant once every one has loaded.
"""

from __future__ import annotations

import json
import os
import signal
import sys

from agentos_kernel import Err, Runtime


def ready(**extra: object) -> None:
    print(json.dumps({"ready": True, "pid": os.getpid(), **extra}), flush=True)


def main(mode: str, workspace: str, arg: str, count: str = "1") -> None:
    if mode == "run":
        rt = Runtime.from_workspace(workspace, profile=arg)
        ready()
        sys.stdin.readline()
        ids = []
        for _ in range(int(count)):
            result = rt.handle_user_request("hello, greet Ada")
            assert not isinstance(result, Err), result
            ids.append(result.value.session_id)
        print(json.dumps(ids), flush=True)
        return
    rt = Runtime.from_workspace(workspace)
    session = rt.start_session("hello, greet Ada", arg)
    assert not isinstance(session, Err), session
    if mode == "crash":
        ready()
        os.kill(os.getpid(), signal.SIGKILL)
    ready()
    sys.stdin.readline()
    session.log.append("session.close", "system", {"ok": False, "reason": "held for a test"})
    session.log.close()
    print(json.dumps({"closed": arg}), flush=True)


if __name__ == "__main__":
    main(*sys.argv[1:])
