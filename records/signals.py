"""Signals the records room sends so higher rooms can react without being imported here."""

from django.dispatch import Signal

# Sent after commit with record_type=…: an outbound write of that type is waiting.
outbound_write_queued = Signal()
