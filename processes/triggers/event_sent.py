"""Event triggers: ``trigger: { event: 'lead.created' }`` starts one run for every new event of that
name, invoked as the sender, with the event's ``data`` as its input.

``processes.events.service.event_send`` calls ``event_triggers_start`` inside the transaction that
stores the event, so the runs commit with the event (an event never exists without them) and are
sent to a worker after the commit; they are the event's ``runs`` in the ``POST /v1/events`` answer.
A replayed key stores no new event, so it starts nothing. Each run's idempotency key
``event:<process>:<eventId>`` (unique on the run) makes a second start for one event impossible.
A check that fails (the data does not fit the process's input schema, a switch is off) is a
``refused`` run naming the field or switch — the event is kept either way.
"""

from __future__ import annotations

import logging

from processes.errors import ProcessNotFound
from processes.events.models import Event
from processes.invoke import run_start
from processes.models import ProcessRun
from processes.triggers.index import event_triggers

logger = logging.getLogger(__name__)


def event_triggers_start(event: Event) -> list[ProcessRun]:
    """Start one run of every process triggered by ``event``'s name; answer them."""
    runs: list[ProcessRun] = []
    sender = event.sender
    if sender is None:  # a new event always has its sender; only a deleted user's loses it
        return runs
    for trigger in event_triggers(event.name):
        try:
            runs.append(
                run_start(
                    process_id=trigger.process_id,
                    body=event.data,
                    user=sender,
                    idempotency_key=f"event:{trigger.process_id}:{event.event_id}",
                )
            )
        except ProcessNotFound:
            # Removed since this process's index was read (it is at most 30 s old).
            logger.info(
                "event trigger of %s: the process is no longer deployed", trigger.process_id
            )
    return runs
