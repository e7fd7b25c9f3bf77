"""Child processes that do not outlive the process that started them (Linux)."""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(sig: int = signal.SIGTERM) -> None:
    """Ask the kernel to send ``sig`` to this process when its parent dies. Used as a
    ``preexec_fn`` for the broker and called first thing by every HiveMem service, so a
    killed ``hivemem up`` leaves no orphans behind."""
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, sig)
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the request took effect
        os.kill(os.getpid(), sig)
