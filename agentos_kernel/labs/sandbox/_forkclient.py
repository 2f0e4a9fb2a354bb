"""The kernel command of a lab grade run through the fork server (see forkserver.py).

Run as `python -I -S _forkclient.py SOCKET CONFIG_JSON -- PYTHON -m ipykernel_launcher ARGS`
by the kernel manager, where it would otherwise run `_confine.py CONFIG -- CMD`. It asks the
fork server for a kernel: sends the confinement config, CMD, its own working dir and
environment, and hands over its stdin, stdout, stderr and the report fd; then stands in for
the kernel towards the kernel manager: an interrupt it receives is passed on, its exit
status is the sandbox's. Killed, it closes the connection, and the fork server kills that
student's sandbox. It imports nothing from agentos_kernel.
"""

import json
import os
import signal
import socket
import sys

MAX_MESSAGE = 1 << 16


def main() -> None:
    path, config = sys.argv[1], sys.argv[2]
    cmd = sys.argv[sys.argv.index("--") + 1:]
    report = json.loads(config)["report_fd"]
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(path)
    request = {"config": config, "cmd": cmd, "cwd": os.getcwd(), "env": dict(os.environ)}
    socket.send_fds(conn, [json.dumps(request).encode()], [0, 1, 2, report])
    os.close(report)

    def interrupt(signum: int, frame: object) -> None:
        conn.send(b"interrupt")

    signal.signal(signal.SIGINT, interrupt)
    while True:
        msg = conn.recv(MAX_MESSAGE)
        if not msg:  # the fork server or its monitor died: the sandbox is gone with it
            os._exit(128 + signal.SIGKILL)
        item = json.loads(msg)
        if "exit" in item:
            os._exit(int(item["exit"]))


if __name__ == "__main__":
    main()
