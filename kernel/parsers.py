"""The request body parsers every view uses (``REST_FRAMEWORK["DEFAULT_PARSER_CLASSES"]``).

DRF's own parsers, each followed by ``kernel.input.data_check``: JSON nested deeper than
``JSON_MAX_DEPTH`` is 400 ``INVALID_JSON``, a NUL or lone surrogate anywhere in the body (keys
included) is 400 ``INVALID_TEXT`` naming where — before any view reads the body.
"""

from __future__ import annotations

from typing import Any

from rest_framework import parsers
from rest_framework.exceptions import ParseError

from kernel.input import JSON_MAX_DEPTH, data_check, form_check


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, bounded in depth and refusing unstorable text."""

    def parse(self, stream, media_type=None, parser_context=None) -> Any:
        try:
            data = super().parse(stream, media_type, parser_context)
        except RecursionError:
            # The decoder gave up before our bound did: the body is deeper than any we accept.
            raise ParseError(
                f"JSON parse error - the body is nested deeper than {JSON_MAX_DEPTH} levels"
            ) from None
        data_check(data)
        return data


class FormParser(parsers.FormParser):
    """DRF's form parser, refusing unstorable text in names and values."""

    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        form_check(data.lists())
        return data


class MultiPartParser(parsers.MultiPartParser):
    """DRF's multipart parser, refusing unstorable text in field names and values."""

    def parse(self, stream, media_type=None, parser_context=None):
        parsed = super().parse(stream, media_type, parser_context)
        form_check(parsed.data.lists())
        return parsed
