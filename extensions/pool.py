"""Warm interpreters: one loaded ``Sandbox`` per module version and thread, LRU-bounded.

Spawning the sandbox child and evaluating a module costs more than most calls, so hooks (one per
write) and process deliveries keep their interpreter between calls. The caller starts each use
with ``slice_start()`` (a fresh CPU budget) and ``new_run()`` (the run's bridge); every call runs
in a fresh scope of the sandbox's context, so nothing one call set is seen by the next. The key
carries the code's sha256: a restored database (or a test rolled back) can reuse a version number
for other code, and a pooled interpreter must never serve stale code. Older versions of the same
module are dropped when a newer one is loaded.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from extensions.sandbox import Sandbox, SandboxLimits
from extensions.store import module_load, module_version

MAX_PER_THREAD = 16
_local = threading.local()


def _pool() -> OrderedDict[tuple[str, int, str], Sandbox]:
    pool = getattr(_local, "sandboxes", None)
    if pool is None:
        pool = _local.sandboxes = OrderedDict()
    return pool


def sandbox_pooled(*, module_id: str, version: int, limits: SandboxLimits) -> Sandbox:
    """This thread's interpreter with ``module_id`` at ``version`` loaded, under ``limits``."""
    pool = _pool()
    key = (module_id, int(version), module_version(module_id, version).sha256)
    sandbox = pool.pop(key, None)
    if sandbox is not None and sandbox.limits != limits:
        sandbox.close()
        sandbox = None
    if sandbox is None:
        for stale in [k for k in pool if k[0] == module_id]:
            pool.pop(stale).close()
        sandbox = Sandbox(limits=limits)
        try:
            module_load(sandbox, module_id=module_id, version=version)
        except BaseException:
            sandbox.close()
            raise
    pool[key] = sandbox
    while len(pool) > MAX_PER_THREAD:
        pool.popitem(last=False)[1].close()
    return sandbox


def pool_close() -> None:
    """End this thread's pooled interpreters (tests, and a worker shutting down)."""
    pool = _pool()
    while pool:
        pool.popitem()[1].close()
