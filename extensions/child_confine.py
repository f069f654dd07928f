"""What every child process that runs JavaScript does first (``sandbox_child``,
``transpile_child``): resource limits, and stdout kept for the protocol alone. Stdlib only."""

from __future__ import annotations

import os
import resource
import signal
import sys
from typing import BinaryIO


def child_confine(argv: list[str]) -> BinaryIO:
    """Confine this process by ``argv`` (``[_, MEM_MB, CPU_S]``) and answer the protocol's
    writer: the real stdout, which nothing else may write to any more."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when this process ends
    # Backstops under the per-call timer: address space for Python-side allocations QuickJS's
    # heap limit does not see, lifetime CPU for anything the timer cannot stop.
    memory, cpu_seconds = int(argv[1]) * 1024 * 1024, int(argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 5))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    protocol = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # a stray write to stdout (Python or C) must not corrupt the protocol
    sys.stdout = sys.stderr
    return protocol
