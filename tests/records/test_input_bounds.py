"""Reads and writes that used to be 500s: bounded limit/offset, patterns, NUL in a read,
idempotency keys past the column, and a hook's rejection that cannot be stored as it is."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from kernel.text import MESSAGE_MAX_CHARS
from records.errors import HookRejection
from records.hooks import HookContext, hook_register
from records.idempotency import IDEMPOTENCY_KEY_MAX_CHARS
from records.models import Record, RecordWriteState, WriteTrail
from records.rest.parser import COUNT_MAX

pytestmark = pytest.mark.django_db


@pytest.fixture
def a_row(alice_api) -> None:
    # A row to compare against: PostgreSQL checks a LIKE pattern only when a row meets it.
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "Acme"}}, format="json")
    assert res.status_code == 201


def query_refusal(code: str, field: str, message: str) -> dict:
    return {
        "error": "invalid_query",
        "rejection": {"code": code, "field": field, "message": message},
    }


# --- /v1/rest --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "code"), [("limit", "INVALID_LIMIT"), ("offset", "INVALID_OFFSET")]
)
@pytest.mark.parametrize(
    "value", ["99999999999999999999999", "9223372036854775808", "1" + "0" * 5000]
)
def test_a_limit_or_offset_past_the_bound_is_400_naming_it(alice_api, a_row, name, code, value):
    res = alice_api.get(f"/v1/rest/customer?{name}={value}")
    assert res.status_code == 400, res.content
    assert res.json()["rejection"]["code"] == code
    assert res.json()["rejection"]["field"] == name
    assert res.json()["rejection"]["message"].startswith(
        f"{name} must be at most {COUNT_MAX}, not "
    )


def test_the_largest_limit_and_offset_are_answered(alice_api, a_row):
    res = alice_api.get(f"/v1/rest/customer?select=company_name&limit={COUNT_MAX}&offset=0")
    assert res.status_code == 200
    assert res.json() == [{"company_name": "Acme"}]
    res = alice_api.get(f"/v1/rest/customer?select=company_name&limit=00001&offset={COUNT_MAX}")
    assert res.status_code == 200
    assert res.json() == []


@pytest.mark.parametrize(
    "value",
    ["9223372036854775808", "-9223372036854775809", "99999999999999999999999", "1" + "0" * 5000],
)
@pytest.mark.parametrize("shape", ["eq.{}", "gt.{}", "in.(1,{})"])
def test_an_integer_column_filter_past_64_bits_is_400_naming_the_column(
    alice_api, a_row, value, shape
):
    res = alice_api.get(f"/v1/rest/customer?sync_version={shape.format(value)}")
    assert res.status_code == 400, res.content
    assert res.json()["rejection"]["code"] == "INVALID_VALUE"
    assert res.json()["rejection"]["field"] == "sync_version"


def test_an_integer_column_filter_at_the_64_bit_bounds_is_answered(alice_api, a_row):
    res = alice_api.get("/v1/rest/customer?select=company_name&sync_version=lt.9223372036854775807")
    assert res.json() == [{"company_name": "Acme"}]
    res = alice_api.get(
        "/v1/rest/customer?select=company_name&sync_version=gt.-9223372036854775808"
    )
    assert res.json() == [{"company_name": "Acme"}]


@pytest.mark.parametrize("operator", ["like", "ilike"])
def test_a_pattern_ending_in_a_lone_backslash_is_400(alice_api, a_row, operator):
    res = alice_api.get(f"/v1/rest/customer?company_name={operator}.Ac%5C")
    assert res.status_code == 400, res.content
    assert res.json() == query_refusal(
        "INVALID_VALUE",
        "company_name",
        f"{operator} pattern 'Ac\\\\' ends with a lone \\; write \\\\ for a backslash",
    )


def test_an_escaped_backslash_at_the_end_of_a_pattern_is_a_pattern(alice_api, a_row):
    res = alice_api.get("/v1/rest/customer?select=company_name&company_name=like.Ac%5C%5C")
    assert res.status_code == 200
    assert res.json() == []


def test_a_nul_in_a_query_value_is_400_on_the_read_and_in_a_batch(alice_api, a_row):
    res = alice_api.get("/v1/rest/customer?company_name=eq.%00")
    assert res.status_code == 400
    assert res.json()["rejection"]["code"] == "INVALID_TEXT"
    assert res.json()["rejection"]["field"] == "company_name"

    # In a batch the read is a JSON string (no NUL in it); the NUL appears when it is decoded.
    res = alice_api.post(
        "/v1/batch",
        {"reads": ["customer?company_name=eq.%00", "customer?select=company_name"]},
        format="json",
    )
    assert res.status_code == 200, res.content
    assert res.json() == {
        "results": [
            {
                "error": {
                    "status": 400,
                    **query_refusal(
                        "INVALID_VALUE",
                        "company_name",
                        "company_name='eq.\\x00' contains a NUL character (U+0000), which text cannot hold",
                    ),
                }
            },
            {"rows": [{"company_name": "Acme"}], "truncated": False},
        ]
    }


# --- idempotency keys ------------------------------------------------------------------------


def key_refusal(field: str, message: str) -> dict:
    return {
        "error": "invalid_request",
        "rejection": {"code": "INVALID_PAYLOAD", "field": field, "message": message},
    }


def test_an_idempotency_key_header_past_the_bound_is_400_naming_the_header(alice_api):
    res = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "A"}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="k" * 250,
    )
    assert res.status_code == 400, res.content
    assert res.json() == key_refusal(
        "Idempotency-Key",
        f"Idempotency-Key is 250 characters; at most {IDEMPOTENCY_KEY_MAX_CHARS} are accepted",
    )
    assert Record.reads.count() == 0
    assert WriteTrail.reads.count() == 0


def test_an_idempotency_key_in_the_body_past_the_bound_is_400_naming_it(alice_api):
    res = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "A"}, "idempotencyKey": "k" * 1000},
        format="json",
    )
    assert res.status_code == 400
    assert res.json() == key_refusal(
        "idempotencyKey",
        f"idempotencyKey is 1000 characters; at most {IDEMPOTENCY_KEY_MAX_CHARS} are accepted",
    )
    assert Record.reads.count() == 0


def test_the_longest_idempotency_key_is_stored_and_deduplicates(alice_api):
    key = "k" * IDEMPOTENCY_KEY_MAX_CHARS
    first = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "A"}},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    again = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "A"}},
        format="json",
        HTTP_IDEMPOTENCY_KEY=key,
    )
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json()["pgRowId"] == again.json()["pgRowId"]
    assert Record.reads.get().idempotency_key.endswith(key)


def test_a_nul_in_the_idempotency_key_header_is_400(alice_api):
    res = alice_api.post(
        "/v1/data/customer",
        {"parent": {"company_name": "A"}},
        format="json",
        HTTP_IDEMPOTENCY_KEY="a\x00b",
    )
    assert res.status_code == 400
    assert res.json() == key_refusal(
        "Idempotency-Key",
        "Idempotency-Key contains a NUL character (U+0000), which text cannot hold",
    )
    assert Record.reads.count() == 0


# --- a hook's rejection ----------------------------------------------------------------------


@pytest.fixture
def rejecting_hook() -> Iterator[Callable[..., None]]:
    undo: list[Callable[[], None]] = []

    def _register(*, message: str, code: str = "BAD", field: str | None = "parent.memo") -> None:
        def hook(context: HookContext) -> None:
            raise HookRejection(message, code=code, field=field)

        undo.append(hook_register(slot="before_save", record_type="customer", hook=hook))

    yield _register
    for remove in undo:
        remove()


@pytest.mark.parametrize("bad", ["\x00", "\ud800"])
def test_a_rejection_with_unstorable_text_is_answered_and_trailed_cleaned(
    alice_api, rejecting_hook, bad
):
    rejecting_hook(message=f"no{bad}pe", code=f"C{bad}", field=f"parent.m{bad}")
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422, res.content
    assert res.json() == {
        "error": "write_refused",
        "rejection": {"code": "C\ufffd", "field": "parent.m\ufffd", "message": "no\ufffdpe"},
    }
    assert Record.reads.count() == 0
    assert RecordWriteState.reads.count() == 0
    trail = WriteTrail.reads.get()
    assert (trail.outcome, trail.code, trail.field, trail.message) == (
        "refused",
        "C\ufffd",
        "parent.m\ufffd",
        "no\ufffdpe",
    )


def test_a_15_mib_rejection_is_neither_answered_nor_stored_whole(alice_api, rejecting_hook):
    huge = "x" * (15 * 1024 * 1024)
    rejecting_hook(message=huge, code="C" * 500, field="f" * 500)
    res = alice_api.post("/v1/data/customer", {"parent": {"company_name": "A"}}, format="json")
    assert res.status_code == 422
    assert len(res.content) < 3_000
    rejection = res.json()["rejection"]
    marker = f"… [truncated {len(huge) - 1_972} chars]"
    assert rejection["message"] == "x" * 1_972 + marker
    assert len(rejection["message"]) == MESSAGE_MAX_CHARS
    assert (
        len(rejection["code"]) == 64 and rejection["code"] == "C" * 41 + "… [truncated 459 chars]"
    )
    assert (
        len(rejection["field"]) == 128
        and rejection["field"] == "f" * 105 + "… [truncated 395 chars]"
    )
    trail = WriteTrail.reads.get()
    assert (trail.code, trail.field, trail.message) == (
        rejection["code"],
        rejection["field"],
        rejection["message"],
    )
    assert Record.reads.count() == 0
