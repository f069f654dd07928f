"""What a log line is about: the run, step, process and request in hand, carried by every line.

``log_context(run_id=…, process_id=…)`` sets them for the code it wraps (a delivery, a request);
``LogContextFilter`` (on the console handler, ``settings.LOGGING``) copies them onto each record,
so ``TURBOBASE_LOG_FORMAT=json`` (python-json-logger) writes them as keys of the line's object.
A key that does not apply is left out. Context variables, not thread locals: a request's thread
and a worker's delivery each see their own.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from types import MappingProxyType
from typing import Any

CONTEXT_KEYS = ("run_id", "step_id", "process_id", "request_id")

_EMPTY: Mapping[str, str] = MappingProxyType({})
_context: ContextVar[Mapping[str, str]] = ContextVar("turbobase_log_context", default=_EMPTY)


def log_context_get() -> dict[str, str]:
    return dict(_context.get())


@contextlib.contextmanager
def log_context(**values: Any) -> Iterator[None]:
    """The given keys (None: unchanged) for the code inside, the outer ones back after it."""
    token = _context.set(_merged(values))
    try:
        yield
    finally:
        _context.reset(token)


def log_context_set(**values: Any) -> None:
    """Set keys until the enclosing ``log_context`` ends (a step's id, set as the step starts)."""
    _context.set(_merged(values))


def log_context_drop(*keys: str) -> None:
    """Take ``keys`` off the context (a request finished)."""
    current = _context.get()
    if any(key in current for key in keys):
        _context.set({k: v for k, v in current.items() if k not in keys})


def _merged(values: dict[str, Any]) -> dict[str, str]:
    merged = dict(_context.get())
    merged.update({k: str(v) for k, v in values.items() if v is not None and k in CONTEXT_KEYS})
    return merged


class LogContextFilter(logging.Filter):
    """Put the context's keys on each record (never overriding what the call passed in extra)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _context.get().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


def logging_config(log_format: str, level: str) -> dict[str, Any]:
    """``settings.LOGGING``: plain lines, or one JSON object per line (``json``)."""
    formatters: dict[str, Any] = {}
    handler: dict[str, Any] = {
        "class": "logging.StreamHandler",
        "filters": ["context"],
    }
    if log_format == "json":
        formatters["json"] = {
            "()": "pythonjsonlogger.json.JsonFormatter",
            "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
            "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
            "timestamp": False,
        }
        handler["formatter"] = "json"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"context": {"()": "kernel.log_context.LogContextFilter"}},
        "formatters": formatters,
        "handlers": {"console": handler},
        "root": {"handlers": ["console"], "level": level},
    }
