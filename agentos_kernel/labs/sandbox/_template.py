"""The fork server: a template process that imports a lab kernel's modules once and forks a
sandboxed kernel per student (forkserver.py starts it; docs/labs.md says why no state passes).

Run as `[unshare ...] python -E -s _template.py SOCKET MODULE...`. It imports ipykernel and
the MODULEs, checks that it is still single-threaded (fork copies only the calling thread),
listens on SOCKET (a Unix socket in a directory only the grader may enter) and prints
`ready`. It never runs a student's code and never reads a request: for each connection
(`_forkclient.py`) it forks at once, and the child does the rest:

- the *monitor* (the fork) reads the request (confinement config, kernel command, working
  dir, environment, and the client's stdin/stdout/stderr and report fd), enters new network
  and pid namespaces and forks the launcher; it then passes interrupts on, reports the
  launcher's exit status to the client, and kills the launcher when the client goes away;
- the *launcher* (pid 1 of the new namespaces) drops the connection and every fd but the
  four it was given, moves to the box, applies each layer of `_confine.py` (limits, cgroups,
  capabilities, no_new_privs, seccomp, Landlock naming only this box) and forks the kernel;
- the *kernel* takes the student's environment, installs the audit hook and runs
  IPKernelApp in-process with the command's arguments (as `python -m ipykernel_launcher`).
"""

import contextlib
import ctypes
import importlib
import json
import os
import selectors
import signal
import socket
import sys
import tempfile

from agentos_kernel.labs.sandbox import _audit_site, _confine  # the hook installs in each kernel

CLONE_NEWNET, CLONE_NEWPID = 0x40000000, 0x20000000
MAX_REQUEST = 1 << 20
KERNEL = ["-m", "ipykernel_launcher"]
KERNEL_MODULES = ("ipykernel.kernelapp", "ipykernel.ipkernel", "ipykernel.zmqshell")


def preload(modules: list[str]) -> None:
    for name in (*KERNEL_MODULES, *modules):
        importlib.import_module(name)
    threads = len(os.listdir("/proc/self/task"))
    if threads != 1:  # a fork would copy one thread of many, locks held and all
        sys.exit(f"fork server: {threads} threads after the imports; it must stay single-threaded")


def serve(path: str) -> None:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    # Children are reaped by the kernel (we keep no status); as pid 1 of the batch namespace
    # this also reaps every orphan.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    print("ready", flush=True)
    watch = selectors.DefaultSelector()
    watch.register(listener, selectors.EVENT_READ)
    watch.register(0, selectors.EVENT_READ)  # the grader's pipe: EOF when it has gone
    while True:
        if any(key.fd == 0 for key, _ in watch.select()):
            os._exit(0)  # as pid 1 of the batch namespace, every kernel goes with it
        conn, _ = listener.accept()
        if os.fork() == 0:
            try:
                listener.close()  # no kernel may take another student's request
                watch.close()
                monitor(conn)
            finally:
                os._exit(127)
        conn.close()


def monitor(conn: socket.socket) -> None:
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    data, fds, _, _ = socket.recv_fds(conn, MAX_REQUEST, 8)
    request = json.loads(data)
    config = json.loads(request["config"])
    stdio, report = fds[:3], fds[3]
    namespaces = _confine.libc.unshare(CLONE_NEWNET | CLONE_NEWPID) == 0
    why = "" if namespaces else os.strerror(ctypes.get_errno())
    pid = os.fork()
    if pid == 0:
        try:
            launcher(conn, request, config, stdio, report, why)
        finally:
            os._exit(127)
    for fd in fds:
        os.close(fd)
    conn.send(json.dumps({"pid": pid}).encode())
    watch = selectors.DefaultSelector()
    watch.register(conn, selectors.EVENT_READ)
    pidfd = os.pidfd_open(pid)
    watch.register(pidfd, selectors.EVENT_READ)
    while True:
        for key, _ in watch.select():
            if key.fd == pidfd:
                _, status = os.waitpid(pid, 0)
                code = os.waitstatus_to_exitcode(status)
                conn.send(json.dumps({"exit": 128 - code if code < 0 else code}).encode())
                os._exit(0)
            msg = conn.recv(64)
            if msg == b"interrupt":
                os.kill(pid, signal.SIGINT)
            elif not msg:  # the client was killed: the sandbox goes, all of it (pid 1 first)
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                os._exit(0)


def launcher(conn: socket.socket, request: dict, config: dict, stdio: list[int], report: int,
             why: str) -> None:
    conn.close()
    for target, fd in enumerate(stdio):
        os.dup2(fd, target)
    keep = {0, 1, 2, report}
    for name in os.listdir("/proc/self/fd"):
        if int(name) not in keep:
            with contextlib.suppress(OSError):  # the listing's own fd, gone already
                os.close(int(name))
    config["report_fd"] = report
    if why:
        os.write(report, (json.dumps({"layer": {"name": "namespaces", "ok": False, "what": (
            f"no namespaces of its own for this kernel (unshare: {why})")}}) + "\n").encode())
    os.chdir(request["cwd"])
    _confine.confine(config)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    pid = os.fork()
    if pid == 0:
        try:
            kernel(request, report)
        finally:
            os._exit(127)

    def forward(signum: int, frame: object) -> None:
        os.kill(pid, signal.SIGINT)

    signal.signal(signal.SIGINT, forward)
    _confine.supervise(pid, config)


def kernel(request: dict, report: int) -> None:
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as in any fresh Python
    cmd = request["cmd"]
    if cmd[1:3] != KERNEL:
        os.write(2, f"fork server: not a kernel command: {cmd[:3]}\n".encode())
        os._exit(127)
    os.environ.clear()
    os.environ.update(request["env"])
    os.environ["AGENTOS_SANDBOX_REPORT_FD"] = str(report)
    tempfile.tempdir = None  # TMPDIR is the box's now
    sys.dont_write_bytecode = True
    sys.path[:] = [p for p in sys.path if p != os.path.dirname(os.path.abspath(__file__))]
    _audit_site._install()
    sys.argv = [cmd[2], *cmd[3:]]
    from ipykernel.kernelapp import IPKernelApp

    try:
        IPKernelApp.launch_instance(argv=cmd[3:])
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def main() -> None:
    preload(sys.argv[2:])
    serve(sys.argv[1])


if __name__ == "__main__":
    main()
