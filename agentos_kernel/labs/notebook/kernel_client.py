"""The grader's kernel client: jupyter_client's, ready as soon as the kernel is.

`AsyncKernelClient.wait_for_ready` waits 0.2 s for IOPub after a kernel_info reply (usually
in vain, see IOPUB_PROOF_SECONDS), and ends with a fixed wait: it reads IOPub until nothing
has come for 0.2 s. On a batch of short labs that is idle time on every kernel start (half
of a forked kernel's whole run). The wait only drains the start-up status messages, and
nbclient skips IOPub messages that do not answer its own request (it matches each
message's parent msg_id), so here they are drained without waiting. What the library's
loop guards is kept: ready means a kernel_info reply on the shell channel *and* a message
on IOPub (the subscription is live, so no output of the first cell can be lost), retried
until the kernel answers, dies or the timeout passes.
"""

from __future__ import annotations

import time
from queue import Empty
from typing import Any

from jupyter_client.asynchronous import AsyncKernelClient

# How long to wait for IOPub after a kernel_info reply before asking again. jupyter_client
# waits 0.2 s; but the first reply usually comes before the IOPub subscription has reached the
# kernel (zmq's "slow joiner"), so its status messages are lost and nothing ever arrives: the
# whole wait is spent. Asking again sooner costs one more kernel_info.
IOPUB_PROOF_SECONDS = 0.02


class PromptKernelClient(AsyncKernelClient):
    """AsyncKernelClient whose `wait_for_ready` does not wait out fixed 0.2 s periods."""

    async def wait_for_ready(self, timeout: float | None = None) -> None:
        deadline = time.monotonic() + (timeout if timeout is not None else float("inf"))
        while True:
            self.kernel_info()
            reply = await self._next(self.shell_channel, 1.0)
            if (reply is not None and reply["msg_type"] == "kernel_info_reply"
                    and await self._next(self.iopub_channel, IOPUB_PROOF_SECONDS) is not None):
                self._handle_kernel_info_reply(reply)
                break
            if not await self._async_is_alive():
                raise RuntimeError("Kernel died before replying to kernel_info")
            if time.monotonic() > deadline:
                raise RuntimeError(f"Kernel didn't respond in {timeout:g} seconds")
        while await self._next(self.iopub_channel, 0) is not None:
            pass

    @staticmethod
    async def _next(channel: Any, timeout: float) -> Any:
        try:
            return await channel.get_msg(timeout=timeout)
        except Empty:
            return None
