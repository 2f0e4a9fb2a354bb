"""Copied into a sandbox as `sitecustomize.py`: a Python audit hook that records what the
student's code *tried* outside its sandbox (the kernel's Landlock rules are what deny it).

Every Python process started in the sandbox imports it (it is first on PYTHONPATH). It
writes one JSON line per distinct attempt to the report fd the grader opened outside the
sandbox, so the grade can say "tried to read /etc/passwd" instead of only "a test failed".
It imports nothing from agentos_kernel and never raises into the student's code.
"""

import contextlib
import json
import os
import sys

MAX_ATTEMPTS = 50


def _literal(host: object) -> bool:
    """An IP address or no host at all: looking it up asks no name server."""
    if host is None:
        return True
    import ipaddress

    try:
        ipaddress.ip_address(os.fsdecode(host) if isinstance(host, bytes) else str(host))
        return True
    except ValueError:
        return False


def _install() -> None:
    fd = int(os.environ.get("AGENTOS_SANDBOX_REPORT_FD", "-1"))
    box = os.environ.get("AGENTOS_SANDBOX_BOX", "")
    roots = tuple(r.rstrip("/") for r in os.environ.get("AGENTOS_SANDBOX_ALLOWED", "").split(os.pathsep) if r)
    if fd < 0 or not box or not roots:
        return
    seen: set[tuple[str, str]] = set()
    # The interpreter's own search path (the grading venv's .pth entries): the import system
    # lists these by itself; only paths the student's code adds later are its attempts.
    startup = {os.path.abspath(p) for p in sys.path if p}

    def inside(path: str) -> bool:
        return any(path == r or path.startswith(r + "/") for r in roots)

    def note(kind: str, target: str) -> None:
        if (kind, target) in seen or len(seen) >= MAX_ATTEMPTS:
            return
        seen.add((kind, target))
        with contextlib.suppress(OSError):
            os.write(fd, (json.dumps({"attempt": {"kind": kind, "target": target}}) + "\n").encode())

    def outside(path: object) -> str | None:
        if not isinstance(path, str | bytes | os.PathLike):
            return None  # an fd: whatever it names was opened before
        where = os.path.abspath(os.fsdecode(path))
        if where.startswith(box + "/"):
            where = os.path.realpath(where)  # a symlink in the box pointing out
        return None if inside(where) else where

    def hook(event: str, args: tuple) -> None:
        try:
            if event == "open":
                path, mode, flags = args
                where = outside(path)
                if where:
                    writes = (isinstance(mode, str) and any(c in mode for c in "wax+")) or (
                        isinstance(flags, int) and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))
                    note("write" if writes else "read", where)
            elif event in ("os.listdir", "os.scandir"):
                where = outside(args[0] if args[0] is not None else ".")
                if where and where not in startup:
                    note("list", where)
            elif event in ("socket.connect", "socket.bind", "socket.sendto"):
                address = args[1]  # (socket, address) for all three
                if isinstance(address, tuple) and len(address) >= 2:
                    note(event.split(".")[1], f"{address[0]}:{address[1]}")
                elif isinstance(address, str | bytes) and event != "socket.bind":  # a Unix socket
                    note(event.split(".")[1], os.fsdecode(address).replace("\0", "@"))
            elif event == "socket.getaddrinfo" and not _literal(args[0]):
                note("resolve", str(args[0]))
        except Exception:  # the hook reports; it must never break what it watches
            pass

    sys.addaudithook(hook)


_install()
