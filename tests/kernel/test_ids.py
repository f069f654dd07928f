"""Ids from outside are parsed, never guessed from a database error."""

from __future__ import annotations

import uuid

import pytest

from kernel.errors import InvalidRequest
from kernel.ids import uuid_or_none, uuid_parse


def test_a_uuid_parses_in_any_of_its_spellings():
    value = uuid.uuid4()
    assert uuid_parse(str(value), field="runId") == value
    assert uuid_parse(str(value).upper(), field="runId") == value
    assert uuid_parse(value, field="runId") == value


@pytest.mark.parametrize("bad", ["", "x", "1234", "\x00", "\ud800", "a" * 300, None, 12, ["a"]])
def test_anything_else_is_refused_naming_the_field(bad):
    assert uuid_or_none(bad) is None
    with pytest.raises(InvalidRequest) as refused:
        uuid_parse(bad, field="pgRowId")
    assert (refused.value.http_status, refused.value.code, refused.value.field) == (
        400,
        "INVALID_ID",
        "pgRowId",
    )
