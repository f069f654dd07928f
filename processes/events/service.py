"""Sending an event: check it, keep it once, start what it triggers, resume every run waiting for it.

``event_send`` works in two transactions, on purpose:

1. the event is stored — once per sender and ``key`` (a unique constraint: of two sends of one key
   at once, the second waits for the first and answers its event) — together with the runs its
   triggers start (``event_starter_register``), so an event never exists without them;
2. then every ``waitFor`` it matches is claimed — one conditional UPDATE from ``waiting`` per
   wait, in one order, so of two events matching one wait exactly one resumes it — and each
   claimed run is queued in the same transaction; the event is marked delivered.

A run parking on a ``waitFor`` does the mirror image (``wait_claim_earlier``): its wait is
committed first, then it looks for an event that already came. Both sides look only after their
own row is committed, so whichever looks second sees the other: an event and a wait passing each
other are never both missed. A sender that dies between 1 and 2 leaves the event undelivered; the
same key sent again, or the sweeper (``events_undelivered_deliver``), delivers it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, connection, transaction
from django.db.models import F, QuerySet, Value
from django.db.models.functions import Coalesce
from django.utils import timezone

from kernel.text import text_problem
from processes.engine.ending import run_redeliver
from processes.errors import EventInvalid, EventKeyReused
from processes.events.models import EVENT_KEY_MAX_CHARS, Event, EventWait, WaitState
from processes.events.names import event_name_problem
from processes.models import PendingReason, ProcessRun, RunState

EVENT_DATA_MAX_CHARS = 100_000  # an event's data, encoded as JSON
BODY_KEYS = ("name", "data", "key")
# An event still undelivered this long after it was stored lost its sender midway: the sweeper
# delivers it (well past any live send's two transactions).
UNDELIVERED_AFTER = timedelta(seconds=30)

# What a trigger does with a new event: start runs (in the event's transaction) and answer them.
EventStarter = Callable[[Event], list[ProcessRun]]
_starters: list[EventStarter] = []


def event_starter_register(starter: EventStarter) -> None:
    """Call ``starter(event)`` for every new event, inside the transaction that stores it; the
    runs it answers are the event's ``runs`` (the triggers fill this in at ``ready()``)."""
    if starter not in _starters:
        _starters.append(starter)


@dataclass(frozen=True)
class EventSent:
    event: Event
    runs: list[ProcessRun]
    resumed: int  # the waits this event resumed
    replayed: bool  # the sender's key was seen before: nothing new was started or resumed


def event_body_check(body: Any) -> tuple[str, dict, str | None]:
    """``{name, data?, key?}`` → (name, data, key); 400 ``invalid_event`` naming the field."""
    if not isinstance(body, dict):
        raise EventInvalid("the body must be a JSON object {name, data, key?}", field="body")
    unknown = sorted(set(body) - set(BODY_KEYS))
    if unknown:
        raise EventInvalid(
            f"{unknown[0]} is not a key of an event (name, data, key)", field=unknown[0]
        )
    if "name" not in body:
        raise EventInvalid("name is required", field="name")
    name = body["name"]
    problem = event_name_problem(name)
    if problem:
        raise EventInvalid(f"name {problem}", field="name")
    data = body.get("data", {})
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise EventInvalid("data must be a JSON object", field="data")
    size = len(json.dumps(data, ensure_ascii=False))
    if size > EVENT_DATA_MAX_CHARS:
        raise EventInvalid(
            f"data is {size} characters as JSON, over the {EVENT_DATA_MAX_CHARS} an event keeps",
            field="data",
        )
    key = body.get("key")
    if key is not None:
        if not isinstance(key, str) or not key.strip():
            raise EventInvalid("key must be a non-empty string (or left out)", field="key")
        if len(key) > EVENT_KEY_MAX_CHARS or text_problem(key):
            raise EventInvalid(
                f"key must be storable text of at most {EVENT_KEY_MAX_CHARS} characters",
                field="key",
            )
    return name, data, key


def event_send(*, sender: User, name: str, data: dict, key: str | None = None) -> EventSent:
    """Keep the event (once per sender and key), start its triggers' runs, resume its waits.

    Call it outside any transaction (a view, a task): its two steps must each commit for the
    exactly-once reasoning above to hold."""
    try:
        with transaction.atomic():
            event = Event.objects.create(name=name, data=data, key=key, sender=sender)
            runs = [run for starter in _starters for run in starter(event)]
            if runs:
                event.run_ids = [str(run.pk) for run in runs]
                event.save(update_fields=["run_ids"])
    except IntegrityError:
        earlier = Event.objects.filter(sender=sender, key=key).first() if key is not None else None
        if earlier is None:
            raise
        return _replay(earlier, name=name, data=data)
    resumed = event_deliver(event)
    return EventSent(event, runs, resumed, replayed=False)


def _replay(event: Event, *, name: str, data: dict) -> EventSent:
    if event.name != name or event.data != data:
        raise EventKeyReused(
            f"key {event.key!r} was sent before as event {event.pk} ({event.name}) with other "
            "name or data; nothing was changed",
            field="key",
            eventId=str(event.pk),
        )
    if event.delivered_at is None:  # its first sender died before delivering it
        event_deliver(event)
        event.refresh_from_db()
    runs = list(ProcessRun.objects.filter(pk__in=event.run_ids).order_by("created_at"))
    return EventSent(event, runs, event.resumed, replayed=True)


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, objects and arrays compare deep."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def data_matches(match: dict, data: dict) -> bool:
    """Every key of ``match`` is in ``data`` with an equal value."""
    return all(k in data and json_equal(v, data[k]) for k, v in match.items())


def waits_for(event: Event) -> QuerySet[EventWait]:
    """The open waits ``event`` may resume: its name, parked by a run created before it came,
    not timed out by then. PostgreSQL narrows by ``match <@ data`` too; ``data_matches`` decides."""
    waits = EventWait.objects.filter(
        event_name=event.name,
        state=WaitState.WAITING,
        after__lt=event.received_at,
        expires_at__gt=event.received_at,
    )
    if connection.vendor == "postgresql":
        waits = waits.filter(match__contained_by=event.data)
    return waits.order_by("pk")


def _wait_claim(wait: EventWait, event: Event, now: datetime) -> bool:
    """Inside a transaction: ``wait`` is ``event``'s, if it is still waiting; its run is queued."""
    claimed = EventWait.objects.filter(pk=wait.pk, state=WaitState.WAITING).update(
        state=WaitState.RECEIVED, event=event, decided_at=now
    )
    if not claimed:
        return False
    # A run not parked yet (its delivery is still on its way to park) is sent a delivery anyway,
    # and that delivery looks at the wait again once parked (``ChainRunner.wait_input``).
    ProcessRun.objects.filter(
        pk=wait.run_id,
        state=RunState.RUNNING,
        pending_reason=PendingReason.AWAITING_INPUT,
        waiting_step=wait.step_id,
    ).update(pending_reason=PendingReason.QUEUED, wake_at=None, updated_at=now)
    run_redeliver(wait.run_id)
    return True


def event_deliver(event: Event) -> int:
    """Resume every run waiting for ``event`` — each wait at most once, ever — and mark the event
    delivered. Safe to repeat. Returns how many waits this call resumed."""
    now = timezone.now()
    with transaction.atomic():
        resumed = sum(
            _wait_claim(wait, event, now)
            for wait in waits_for(event)
            if data_matches(wait.match, event.data)
        )
        Event.objects.filter(pk=event.pk).update(
            resumed=F("resumed") + resumed, delivered_at=Coalesce("delivered_at", Value(now))
        )
    return resumed


def wait_claim_earlier(wait: EventWait) -> bool:
    """For a run that has just parked on ``wait`` (committed): claim it with the first matching
    event that came after the run was created, if one did. True if it was claimed now."""
    events = Event.objects.filter(
        name=wait.event_name, received_at__gt=wait.after, received_at__lt=wait.expires_at
    )
    if connection.vendor == "postgresql":
        events = events.filter(data__contains=wait.match)
    for event in events.order_by("received_at", "event_id").iterator(chunk_size=500):
        if data_matches(wait.match, event.data):
            with transaction.atomic():
                if _wait_claim(wait, event, timezone.now()):
                    Event.objects.filter(pk=event.pk).update(resumed=F("resumed") + 1)
                    return True
            return False  # another event claimed it meanwhile
    return False


def events_undelivered_deliver(now: datetime | None = None) -> int:
    """The sweeper's part: deliver events whose sender died between storing and delivering them."""
    cutoff = (now or timezone.now()) - UNDELIVERED_AFTER
    stale = Event.objects.filter(delivered_at__isnull=True, received_at__lt=cutoff)
    events = list(stale.order_by("received_at")[:500])
    for event in events:
        event_deliver(event)
    return len(events)


def events_visible(user: User) -> QuerySet[Event]:
    """Events the user may read: the ones they sent; an administrator reads every event."""
    events = Event.objects.all()
    return events if user.is_staff else events.filter(sender=user)
