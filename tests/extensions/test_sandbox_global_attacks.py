"""Issue 20 item 3: one user's sandbox call must not break, steer or read a later call of another
user. Each attack below is made by alice's call — at once, from a promise job that runs after
the call returned, or from her result's ``toJSON`` — and bob's call right after it (plain, sent
ahead, or the next row of the same ``call_each`` batch) must see a clean global object, get
exactly his own answer, and see nothing of alice's; alice's next call must see nothing of bob's.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from extensions.child_process import ChildProcess
from extensions.sandbox import Sandbox

# What the attacker does to the global object. `stash` keeps her secret where a later call could
# read it; the accessors would capture what dukpy writes there on the next eval (the next
# call's ctx) and answer it to whoever reads them.
ATTACKS = {
    "freeze": "globalThis.stash = secret; Object.freeze(globalThis);",
    "seal": "globalThis.stash = secret; Object.seal(globalThis);",
    "prevent extensions": "globalThis.stash = secret; Object.preventExtensions(globalThis);",
    "fixed stash": "Object.defineProperty(globalThis, 'stash', { value: secret });",
    "dukpy accessor": "plant('dukpy', false);",
    "deletable dukpy accessor": "plant('dukpy', true);",
    "call_python accessor": "plant('call_python', false);",
}

# When the attack runs, relative to the call (the result's toJSON runs when the value settles).
WHEN = {
    "at once": "attack(); return 'attacked';",
    "promise job": "Promise.resolve().then(attack); return 'queued';",
    "microtask": "queueMicrotask(attack); return 'queued';",
    "late job": (
        "let p = Promise.resolve(); for (let i = 0; i < 20; i += 1) p = p.then(() => null);"
        " p.then(attack); return 'queued';"
    ),
    "toJSON": "return { toJSON() { attack(); return 'serialised'; } };",
    "async toJSON": "await null; return { toJSON() { attack(); return 'serialised'; } };",
}


def module(attack: str, when: str) -> str:
    return f"""
let captured = [];
const plant = (name, configurable) => Object.defineProperty(globalThis, name, {{
  configurable,
  get() {{ return captured; }},
  set(value) {{ captured.push(value); }},
}});
const spied = (name) => {{
  const desc = Object.getOwnPropertyDescriptor(globalThis, name);
  return desc && desc.get ? JSON.stringify(desc.get()) : null;
}};
exports.default = {{
  act: async (ctx) => {{
    if (ctx.user !== 'alice') return exports.default.look(ctx);
    const secret = ctx.secret;
    const attack = () => {{ {ATTACKS[attack]} }};
    {WHEN[when]}
  }},
  look: (ctx) => ({{
    user: ctx.user,
    secret: ctx.secret,
    extensible: Object.isExtensible(globalThis),
    sealed: Object.isSealed(globalThis),
    stash: typeof stash === 'undefined' ? null : stash,
    dukpy: spied('dukpy'),
    call_python: spied('call_python'),
  }}),
}};
"""


ALICE = {"user": "alice", "secret": "alice-s3cret"}
BOB = {"user": "bob", "secret": "bob-s3cret"}


def clean(ctx: Mapping[str, Any]) -> dict[str, Any]:
    """What ``look`` answers on a global object no earlier call changed."""
    return {
        "user": ctx["user"],
        "secret": ctx["secret"],
        "extensible": True,
        "sealed": False,
        "stash": None,
        "dukpy": None,
        "call_python": None,
    }


def attacked(when: str) -> str:
    return {"at once": "attacked", "toJSON": "serialised", "async toJSON": "serialised"}.get(
        when, "queued"
    )


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The ops the sandbox children receive (the real send, observed): a call taken from ahead
    is sent once."""
    ops: list[str] = []
    send_encoded = ChildProcess.send_encoded

    def recording(self: ChildProcess, encoded: str) -> None:
        for line in encoded.splitlines():  # calls sent ahead together are one line each
            op = json.loads(line).get("op")
            if op is not None:
                ops.append(op)
        send_encoded(self, encoded)

    monkeypatch.setattr(ChildProcess, "send_encoded", recording)
    return ops


@pytest.fixture(params=list(ATTACKS))
def attack(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def sandbox() -> Iterator[Sandbox]:
    with Sandbox() as box:
        yield box


@pytest.mark.parametrize("when", list(WHEN))
def test_the_next_users_call_starts_clean_and_sees_nothing_of_the_attack(
    sandbox: Sandbox, attack: str, when: str
) -> None:
    sandbox.load(module(attack, when))
    assert sandbox.call(["act"], ctx=ALICE) == attacked(when)
    assert sandbox.call(["act"], ctx=BOB) == clean(BOB)
    assert sandbox.call(["look"], ctx=ALICE) == clean(ALICE)  # nothing of bob's either
    assert sandbox.call(["act"], ctx=ALICE) == attacked(when)
    assert sandbox.call(["look"], ctx=BOB) == clean(BOB)


@pytest.mark.parametrize("when", list(WHEN))
def test_a_call_sent_ahead_after_the_attack_starts_clean(
    sandbox: Sandbox, attack: str, when: str, sent: list[str]
) -> None:
    sandbox.load(module(attack, when))
    sent.clear()
    assert sandbox.call_ahead(["act"], ctx=ALICE) and sandbox.call_ahead(["act"], ctx=BOB)
    assert sandbox.call(["act"], ctx=ALICE) == attacked(when)
    assert sandbox.call(["act"], ctx=BOB) == clean(BOB)
    assert sent == ["call", "call"]  # both taken from ahead, none sent again
    assert sandbox.call_ahead(["look"], ctx=ALICE)
    assert sandbox.call(["look"], ctx=ALICE) == clean(ALICE)


def each_as_the_caller_does(sandbox: Sandbox, ctxs: list[dict]) -> tuple[int, list[Any]]:
    """``call_each``, then the calls it did not answer one by one (as a migration slice does):
    how many the batch answered, and every value."""
    values = sandbox.call_each(["act"], ctxs)
    return len(values), values + [sandbox.call(["act"], ctx=c) for c in ctxs[len(values) :]]


@pytest.mark.parametrize("when", ["at once", "promise job", "microtask", "late job", "toJSON"])
def test_the_next_row_of_a_batch_starts_clean(sandbox: Sandbox, attack: str, when: str) -> None:
    """The attacking row settles at once (an async function never does: it ends a batch)."""
    sandbox.load(module(attack, when).replace("act: async (ctx)", "act: (ctx)"))
    carol = {"user": "carol", "secret": "carol-s3cret"}
    answered, values = each_as_the_caller_does(sandbox, [ALICE, BOB, carol])
    assert values == [attacked(when), clean(BOB), clean(carol)]
    # An attack at once (or from toJSON, when the value settles) that the fresh-scope check
    # cannot undo ends the batch; a queued one runs only after every row was answered.
    is_undone = attack == "deletable dukpy accessor"
    assert answered == (1 if when in ("at once", "toJSON") and not is_undone else 3)
    assert sandbox.call(["look"], ctx=BOB) == clean(BOB)


# Rows of one batch whose promise jobs run together after the last row (dukpy drains the job
# queue only after the eval): alice's job must neither steer bob's awaiting row nor read (and
# send out through her bridge) what bob's row left.
BATCH = """
exports.default = {
  act: (ctx) => {
    if (ctx.user === 'alice') {
      Promise.resolve().then(() => { globalThis.planted = 'from alice'; });
      Promise.resolve().then(() => ctx.query(String(globalThis.left)).catch(() => 'refused'));
      return 'alice';
    }
    if (ctx.user === 'bob') { globalThis.left = ctx.secret; return 'bob'; }
    return Promise.resolve().then(() => [ctx.user, globalThis.planted ?? 'clean']);
  },
};
"""


def test_a_rows_promise_job_neither_steers_nor_reads_a_later_row() -> None:
    reads: list[str] = []
    with Sandbox(bridge={"query": lambda path: reads.append(path) or []}) as sandbox:
        sandbox.load(BATCH)
        carol = {"user": "carol", "secret": "carol-s3cret"}
        answered, values = each_as_the_caller_does(sandbox, [ALICE, BOB, carol])
        assert values == ["alice", "bob", ["carol", "clean"]]
        # alice's job used her bridge after her turn: she and the rows after her run alone,
        # where her read finds nothing of bob's.
        assert answered == 0
        assert reads == ["undefined"]
        assert sandbox.call_each(["act"], [BOB, carol]) == ["bob"]  # carol awaits: alone
        assert sandbox.call(["act"], ctx=carol) == ["carol", "clean"]
