"""The grader's kernel client (labs/notebook/kernel_client.py): ready as soon as the kernel
has answered kernel_info *and* IOPub has delivered a message (so no output of the first cell
can be lost), asking again while IOPub stays silent, draining start-up messages without
waiting for silence."""

from __future__ import annotations

import asyncio
from queue import Empty
from typing import Any

import pytest

from agentos_kernel.labs.notebook.box import SandboxedKernelManager
from agentos_kernel.labs.notebook.kernel_client import IOPUB_PROOF_SECONDS, PromptKernelClient


class Channel:
    """A channel whose messages arrive as the test scripted: one list per get_msg call."""

    def __init__(self, script: list[Any]) -> None:
        self.script = script
        self.timeouts: list[float] = []

    async def get_msg(self, timeout: float) -> Any:
        self.timeouts.append(timeout)
        got = self.script.pop(0) if self.script else None
        if got is None:
            raise Empty
        return got


class Scripted(PromptKernelClient):
    def __init__(self, shell: Channel, iopub: Channel, alive: bool = True) -> None:
        super().__init__()
        self.fake_shell, self.fake_iopub, self.alive, self.asked, self.ready = shell, iopub, alive, 0, None

    @property
    def shell_channel(self) -> Any:  # type: ignore[override]
        return self.fake_shell

    @property
    def iopub_channel(self) -> Any:  # type: ignore[override]
        return self.fake_iopub

    def kernel_info(self) -> str:
        self.asked += 1
        return f"info-{self.asked}"

    async def _async_is_alive(self) -> bool:
        return self.alive

    def _handle_kernel_info_reply(self, msg: dict[str, Any]) -> None:
        self.ready = msg


REPLY = {"msg_type": "kernel_info_reply", "content": {}}
STATUS = {"msg_type": "status", "content": {"execution_state": "idle"}}


def test_ready_needs_an_iopub_message_and_asks_again_until_one_comes() -> None:
    shell = Channel([REPLY, REPLY])
    iopub = Channel([None, STATUS, STATUS, STATUS, None])  # the first reply's status is lost
    kc = Scripted(shell, iopub)
    asyncio.run(kc.wait_for_ready(timeout=10))
    assert kc.asked == 2 and kc.ready is REPLY
    # proof waits are short; the start-up messages left are drained without any wait
    assert iopub.timeouts == [IOPUB_PROOF_SECONDS, IOPUB_PROOF_SECONDS, 0, 0, 0] and not iopub.script


def test_a_dead_kernel_or_the_timeout_ends_the_wait() -> None:
    with pytest.raises(RuntimeError, match="died before replying"):
        asyncio.run(Scripted(Channel([]), Channel([]), alive=False).wait_for_ready(timeout=10))
    with pytest.raises(RuntimeError, match="didn't respond in 0 seconds"):
        asyncio.run(Scripted(Channel([REPLY]), Channel([])).wait_for_ready(timeout=0))


def test_the_sandboxed_kernel_manager_uses_it() -> None:
    assert isinstance(SandboxedKernelManager().client(), PromptKernelClient)
