"""GET /v1/rest/<resource>: each operator, not., order, limit/offset, select, RLS, refusals."""

from __future__ import annotations

import json

import pytest
from django.test import override_settings

from records.boundary import record_create, record_delete
from records.door import door_open
from records.models import Record, RecordWriteState, WriteTrail
from records.trail import Actor

pytestmark = pytest.mark.django_db

ROWS = {
    "L1": {
        "company_name": "Acme",
        "status": "pending",
        "legacy_id": "L1",
        "amount": 10,
        "rank": 10,
        "active": True,
        "tag": "x",
    },
    "L2": {
        "company_name": "acme west",
        "status": "done",
        "legacy_id": "L2",
        "amount": 2.5,
        "rank": 9,
        "active": False,
    },
    "L3": {
        "company_name": "Beta",
        "status": "pending",
        "legacy_id": "L3",
        "amount": "abc",
        "rank": 100,
        "note": None,
    },
}


def _create(user, record_type: str, parent: dict) -> Record:
    return record_create(actor=Actor(user=user), record_type=record_type, parent=parent).record


@pytest.fixture
def rows(alice, bob):
    made = {key: _create(alice, "legacy_customer", dict(parent)) for key, parent in ROWS.items()}
    made["B1"] = _create(
        bob,
        "legacy_customer",
        {"company_name": "Bobco", "status": "pending", "legacy_id": "B1", "amount": 100},
    )
    return made


def _ids(res) -> list[str]:
    assert res.status_code == 200, res.content
    return [row["legacy_id"] for row in res.json()]


def _read(api, query: str):
    return api.get(f"/v1/rest/legacy_customer?select=legacy_id&{query}")


# --- shape -----------------------------------------------------------------------------------


def test_default_select_is_every_column_and_the_rows_fields(alice_api, rows):
    res = alice_api.get("/v1/rest/legacy_customer?legacy_id=eq.L1")
    assert res.status_code == 200
    assert res["Content-Type"] == "application/json"
    record = rows["L1"]
    record.refresh_from_db()
    assert res.json() == [
        {
            "pg_row_id": str(record.pg_row_id),
            "external_id": None,
            "sync_state": "local",
            "sync_version": 1,
            "synced_at": None,
            "source_system": "",
            "created_at": record.created_at.isoformat(),
            "updated_at": record.updated_at.isoformat(),
            **ROWS["L1"],
        }
    ]


def test_select_subset_with_alias_and_missing_key_is_null(alice_api, rows):
    res = alice_api.get(
        "/v1/rest/legacy_customer?select=legacy_id,name:company_name,tag,sync_state&order=legacy_id"
    )
    assert res.status_code == 200
    assert res.json() == [
        {"legacy_id": "L1", "name": "Acme", "tag": "x", "sync_state": "local"},
        {"legacy_id": "L2", "name": "acme west", "tag": None, "sync_state": "local"},
        {"legacy_id": "L3", "name": "Beta", "tag": None, "sync_state": "local"},
    ]


def test_star_select_is_every_column_and_an_alias_adds_one(alice_api, rows):
    res = alice_api.get("/v1/rest/legacy_customer?select=*,id:legacy_id&legacy_id=eq.L2")
    row = res.json()[0]
    assert list(row)[:9] == [
        "pg_row_id",
        "external_id",
        "sync_state",
        "sync_version",
        "synced_at",
        "source_system",
        "created_at",
        "updated_at",
        "id",
    ]
    assert {k: row[k] for k in list(row)[9:]} == {k: v for k, v in ROWS["L2"].items()}
    assert row["id"] == "L2"


# --- operators on JSON fields ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=eq.pending", ["L1", "L3"]),
        ("amount=eq.10", ["L1"]),  # a JSON number compared as its text
        ("status=neq.pending", ["L2"]),
        ("tag=neq.y", ["L1"]),  # a missing key is null: it matches neither eq nor neq
        ("amount=gt.5", ["L1"]),  # numeric: 10 > 5, and "abc" is not a number
        ("amount=gte.2.5", ["L1", "L2"]),
        ("amount=lt.10", ["L2"]),
        ("amount=lte.10", ["L1", "L2"]),
        ("rank=gt.9", ["L1", "L3"]),  # numeric, not text ("10" < "9" as text)
        # Past 64 bits (SQLite cannot bind it) the integer compares as a float.
        ("rank=lt.99999999999999999999999", ["L1", "L2", "L3"]),
        ("rank=gt.-9223372036854775809", ["L1", "L2", "L3"]),
        ("rank=gt.99999999999999999999999", []),
        ("rank=lt.1" + "0" * 5000, ["L1", "L2", "L3"]),
        ("legacy_id=gt.L1", ["L2", "L3"]),  # not a number: compared as text
        ("legacy_id=lte.L2", ["L1", "L2"]),
        ("company_name=like.Acme*", ["L1"]),  # like is case-sensitive
        ("company_name=like.*west", ["L2"]),
        ("company_name=ilike.acme*", ["L1", "L2"]),
        ("company_name=ilike.*E*", ["L1", "L2", "L3"]),
        ("company_name=like.B_ta", ["L3"]),
        ("tag=is.null", ["L2", "L3"]),
        ("note=is.null", ["L1", "L2", "L3"]),  # a JSON null and a missing key alike
        ("active=is.true", ["L1"]),
        ("active=is.false", ["L2"]),
        ("status=in.(done,other)", ["L2"]),
        ("legacy_id=in.(L1,L3)", ["L1", "L3"]),
        ("legacy_id=in.()", []),
    ],
)
def test_operator_on_json_field(alice_api, rows, query, expected):
    assert _ids(_read(alice_api, f"{query}&order=legacy_id")) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("status=not.eq.pending", ["L2"]),
        ("tag=not.eq.x", []),  # null stays unmatched under not., as in SQL and PostgREST
        ("status=not.neq.pending", ["L1", "L3"]),
        ("amount=not.gt.5", ["L2"]),
        ("company_name=not.like.Acme*", ["L2", "L3"]),
        ("company_name=not.ilike.acme*", ["L3"]),
        ("tag=not.is.null", ["L1"]),
        ("active=not.is.true", ["L2", "L3"]),  # a missing key is not true
        ("legacy_id=not.in.(L1,L3)", ["L2"]),
        ("legacy_id=not.in.()", ["L1", "L2", "L3"]),
    ],
)
def test_not_prefix(alice_api, rows, query, expected):
    assert _ids(_read(alice_api, f"{query}&order=legacy_id")) == expected


def test_filters_on_one_column_and(alice_api, rows):
    assert _ids(_read(alice_api, "rank=gte.9&rank=lte.10&order=legacy_id")) == ["L1", "L2"]


def test_migration_predicate_on_a_key_no_row_has_yet(alice_api, rows):
    res = alice_api.get(
        "/v1/rest/legacy_customer?select=legacy_id,company_name&migrated_at=is.null&order=legacy_id"
    )
    assert res.json() == [
        {"legacy_id": "L1", "company_name": "Acme"},
        {"legacy_id": "L2", "company_name": "acme west"},
        {"legacy_id": "L3", "company_name": "Beta"},
    ]


# --- operators on fixed columns --------------------------------------------------------------


def test_fixed_columns_filter_by_their_type(alice_api, rows):
    pg_row_id = str(rows["L2"].pg_row_id)
    assert _ids(_read(alice_api, f"pg_row_id=eq.{pg_row_id}")) == ["L2"]
    assert _ids(_read(alice_api, f"pg_row_id=neq.{pg_row_id}&order=legacy_id")) == ["L1", "L3"]
    assert _ids(
        _read(alice_api, f"pg_row_id=in.({pg_row_id},{rows['L3'].pg_row_id})&order=legacy_id")
    ) == ["L2", "L3"]
    assert _ids(_read(alice_api, "sync_version=eq.1&order=legacy_id")) == ["L1", "L2", "L3"]
    assert _ids(_read(alice_api, "sync_version=gt.1")) == []
    assert _ids(_read(alice_api, "sync_state=eq.local&order=legacy_id")) == ["L1", "L2", "L3"]
    assert _ids(_read(alice_api, "created_at=gte.2000-01-01&order=legacy_id")) == ["L1", "L2", "L3"]
    assert _ids(_read(alice_api, "created_at=lt.2000-01-01T00:00:00Z")) == []
    assert _ids(_read(alice_api, "synced_at=is.null&order=legacy_id")) == ["L1", "L2", "L3"]


def test_external_id_filter_and_the_ctx_query_shape(alice, rows):
    from records.rest.execute import rest_read

    vendor = _create(alice, "entity", {"entity_type": "vendor", "terms_id": "NET30"})
    _create(alice, "entity", {"entity_type": "customer", "terms_id": "NET10"})
    # The source would stamp external_id on confirm; fake that upstream state here.
    with door_open():
        Record.objects.filter(pk=vendor.pk).update(external_id="123", sync_state="synced")
    assert rest_read(
        user=alice, path_and_query="entity?select=terms_id&entity_type=eq.vendor&external_id=eq.123"
    ) == [{"terms_id": "NET30"}]
    assert rest_read(user=alice, path_and_query="entity?select=terms_id&external_id=is.null") == [
        {"terms_id": "NET10"}
    ]
    assert rest_read(user=alice, path_and_query="entity?select=terms_id&external_id=like.1*") == [
        {"terms_id": "NET30"}
    ]


@pytest.mark.parametrize(
    ("query", "code", "field", "message"),
    [
        (
            "pg_row_id=eq.nope",
            "INVALID_VALUE",
            "pg_row_id",
            "'nope' is not a valid uuid for pg_row_id",
        ),
        (
            "sync_version=gt.x",
            "INVALID_VALUE",
            "sync_version",
            "'x' is not a valid integer for sync_version",
        ),
        (
            "created_at=gt.yesterday",
            "INVALID_VALUE",
            "created_at",
            "'yesterday' is not a valid datetime for created_at",
        ),
        (
            "pg_row_id=like.a*",
            "OPERATOR_NOT_APPLICABLE",
            "pg_row_id",
            "like does not apply to pg_row_id (uuid)",
        ),
        (
            "sync_state=is.true",
            "OPERATOR_NOT_APPLICABLE",
            "sync_state",
            "is.true applies to boolean columns; sync_state is text",
        ),
        (
            "status=approx.1",
            "UNKNOWN_OPERATOR",
            "status",
            "'approx' is not an operator; use one of eq, neq, gt, gte, lt, lte, like, ilike, is, in, "
            "optionally after not.",
        ),
        ("limit=-1", "INVALID_LIMIT", "limit", "limit must be a non-negative integer, not '-1'"),
        ("offset=x", "INVALID_OFFSET", "offset", "offset must be a non-negative integer, not 'x'"),
    ],
)
def test_bad_query_is_400_naming_the_parameter(alice_api, rows, query, code, field, message):
    res = alice_api.get(f"/v1/rest/legacy_customer?{query}")
    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_query",
        "rejection": {"code": code, "field": field, "message": message},
    }


@pytest.mark.parametrize(
    ("query", "field", "name"),
    [
        ("select=legacy_id,owner", "select", "owner"),
        ("idempotency_key=eq.k", "idempotency_key", "idempotency_key"),
        ("order=record_type", "order", "record_type"),
        ("select=group", "select", "group"),
    ],
)
def test_unknown_column_is_400_naming_it(alice_api, rows, query, field, name):
    res = alice_api.get(f"/v1/rest/legacy_customer?{query}")
    assert res.status_code == 400
    assert res.json() == {
        "error": "invalid_query",
        "rejection": {
            "code": "UNKNOWN_COLUMN",
            "field": field,
            "message": f"'{name}' is not a column of legacy_customer",
        },
    }


# --- order, limit, offset --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("order", "expected"),
    [
        ("legacy_id.desc", ["L3", "L2", "L1"]),
        ("status.asc,legacy_id.desc", ["L2", "L3", "L1"]),
        ("status.desc,legacy_id", ["L1", "L3", "L2"]),
        ("rank", ["L2", "L1", "L3"]),  # JSON numbers order numerically
        ("rank.desc", ["L3", "L1", "L2"]),
        ("tag,legacy_id", ["L1", "L2", "L3"]),  # ascending: nulls last
        ("tag.desc,legacy_id", ["L2", "L3", "L1"]),  # descending: nulls first
        ("tag.asc.nullsfirst,legacy_id", ["L2", "L3", "L1"]),
        ("tag.desc.nullslast,legacy_id.desc", ["L1", "L3", "L2"]),
        ("sync_version,legacy_id.desc", ["L3", "L2", "L1"]),
    ],
)
def test_order(alice_api, rows, order, expected):
    assert _ids(_read(alice_api, f"order={order}")) == expected


@pytest.mark.parametrize(
    ("page", "expected"),
    [
        ("limit=2", ["L1", "L2"]),
        ("limit=1&offset=1", ["L2"]),
        ("offset=2", ["L3"]),
        ("offset=5", []),
        ("limit=0", []),
        ("limit=10", ["L1", "L2", "L3"]),
    ],
)
def test_limit_and_offset(alice_api, rows, page, expected):
    assert _ids(_read(alice_api, f"order=legacy_id&{page}")) == expected


# --- row-level security ----------------------------------------------------------------------


def test_owner_scoped_rows_are_absent_for_another_user(alice_api, bob_api, admin_api, rows):
    assert _ids(_read(bob_api, "order=legacy_id")) == ["B1"]
    assert _ids(_read(bob_api, f"pg_row_id=eq.{rows['L1'].pg_row_id}")) == []
    assert _ids(_read(alice_api, "order=legacy_id")) == ["L1", "L2", "L3"]
    assert _ids(_read(admin_api, "order=legacy_id")) == ["B1", "L1", "L2", "L3"]


def test_migration_items_are_owner_scoped(alice, bob, bob_api, admin_api):
    _create(alice, "migration_item", {"legacy_id": "M1", "status": "pending"})
    _create(bob, "migration_item", {"legacy_id": "M2", "status": "pending"})
    path = "/v1/rest/migration_item?select=legacy_id&status=eq.pending&order=legacy_id"
    assert bob_api.get(path).json() == [{"legacy_id": "M2"}]
    assert admin_api.get(path).json() == [{"legacy_id": "M1"}, {"legacy_id": "M2"}]


def test_hidden_rows_are_absent(alice, alice_api, bob_api):
    kept = _create(alice, "customer", {"company_name": "Kept"})
    held = _create(alice, "customer", {"company_name": "Held"})
    # A stock delete of a connected record is held: hidden at once.
    assert (
        record_delete(
            actor=Actor(user=alice), record_type="customer", pg_row_id=held.pg_row_id
        ).outcome
        == "held"
    )
    for api in (alice_api, bob_api):  # customer is readable by all
        res = api.get("/v1/rest/customer?select=pg_row_id,company_name")
        assert res.json() == [{"pg_row_id": str(kept.pg_row_id), "company_name": "Kept"}]


def test_no_credentials_is_401(client):
    res = client.get("/v1/rest/legacy_customer")
    assert res.status_code == 401
    assert res.json()["error"] == "not_authenticated"


def test_rest_read_refuses_an_anonymous_user(db):
    from django.contrib.auth.models import AnonymousUser

    from records.rest.errors import ReadNotAuthenticated
    from records.rest.execute import rest_read

    with pytest.raises(ReadNotAuthenticated):
        rest_read(user=AnonymousUser(), path_and_query="legacy_customer")


# --- refusals: resource, rpc, methods --------------------------------------------------------


def test_unknown_resource_is_404(alice_api):
    res = alice_api.get("/v1/rest/nope?select=a")
    assert res.status_code == 404
    assert res.json() == {"error": "record_type_not_found", "id": "nope"}


def test_rpc_is_refused(alice_api, rows):
    res = alice_api.get("/v1/rest/rpc/purge?x=1")
    assert res.status_code == 400
    assert res.json() == {
        "error": "rpc_not_supported",
        "rejection": {
            "code": "RPC_NOT_SUPPORTED",
            "field": "path",
            "message": "rpc/ paths name stored procedures, which this read never calls; read a resource instead",
        },
    }


def test_path_must_be_one_resource_name(alice_api):
    res = alice_api.get("/v1/rest/legacy_customer/extra")
    assert res.status_code == 400
    assert res.json()["rejection"]["code"] == "INVALID_PATH"


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete", "options"])
def test_write_methods_are_refused_and_change_nothing(alice_api, rows, method):
    before = (Record.reads.count(), WriteTrail.reads.count(), RecordWriteState.reads.count())
    body = {"pgRowId": str(rows["L1"].pg_row_id), "parent": {"status": "x"}}
    res = getattr(alice_api, method)("/v1/rest/legacy_customer", body, format="json")
    assert res.status_code == 405
    assert res.json() == {
        "error": "read_only",
        "rejection": {
            "code": "READ_ONLY",
            "field": None,
            "message": f"/v1/rest is a read and answers GET only; {method.upper()} is refused. "
            "Write records through /v1/data",
        },
    }
    assert (
        Record.reads.count(),
        WriteTrail.reads.count(),
        RecordWriteState.reads.count(),
    ) == before
    rows["L1"].refresh_from_db()
    assert rows["L1"].fields["status"] == "pending"


def test_rpc_write_is_refused_as_a_write(alice_api):
    assert alice_api.post("/v1/rest/rpc/purge", {}, format="json").status_code == 405


# --- the byte ceiling ------------------------------------------------------------------------


def test_byte_ceiling_fails_by_name_and_never_answers_short(alice_api, rows):
    full = alice_api.get("/v1/rest/legacy_customer?order=legacy_id")
    size = len(full.content)
    assert len(full.json()) == 3
    assert size == len(json.dumps(full.json(), separators=(",", ":"), ensure_ascii=False).encode())
    with override_settings(REST_MAX_RESPONSE_BYTES=size):
        assert alice_api.get("/v1/rest/legacy_customer?order=legacy_id").content == full.content
    with override_settings(REST_MAX_RESPONSE_BYTES=size - 1):
        res = alice_api.get("/v1/rest/legacy_customer?order=legacy_id")
        assert res.status_code == 413
        assert res.json() == {
            "error": "response_too_large",
            "rejection": {
                "code": "READ_BYTE_CEILING",
                "field": None,
                "message": f"the answer to this read is larger than the read byte ceiling of {size - 1} bytes "
                "(rest.max_response_bytes); ask for a page with limit and offset, or filter more",
            },
        }
        # A page that fits is answered whole.
        assert _ids(_read(alice_api, "order=legacy_id&limit=1")) == ["L1"]


def test_rest_read_takes_its_own_budget(alice, rows):
    from records.rest.errors import ResponseTooLarge
    from records.rest.execute import rest_read

    assert rest_read(
        user=alice, path_and_query="legacy_customer?select=legacy_id&order=legacy_id", max_bytes=100
    ) == [{"legacy_id": "L1"}, {"legacy_id": "L2"}, {"legacy_id": "L3"}]
    # [{"legacy_id":"L1"},{"legacy_id":"L2"},{"legacy_id":"L3"}] is 58 bytes.
    assert (
        len(rest_read(user=alice, path_and_query="legacy_customer?select=legacy_id", max_bytes=58))
        == 3
    )
    with pytest.raises(ResponseTooLarge) as info:
        rest_read(user=alice, path_and_query="legacy_customer?select=legacy_id", max_bytes=57)
    assert info.value.code == "READ_BYTE_CEILING"


# --- the resource registry -------------------------------------------------------------------


def test_a_registered_resource_is_read_with_its_own_closed_columns(alice, bob, alice_api, rows):
    from records.rest.resources import (
        Column,
        ColumnKind,
        Resource,
        resource_register,
        resource_unregister,
    )

    resource_register(
        Resource(
            name="my_trail",
            columns=(
                Column("id", "id", ColumnKind.INTEGER),
                Column("action", "action", ColumnKind.TEXT),
                Column("outcome", "outcome", ColumnKind.TEXT),
                Column("at", "at", ColumnKind.DATETIME),
            ),
            rows_visible=lambda user: WriteTrail.reads.filter(actor_id=user.pk),
            order_default=("id",),
            tiebreaker="id",
        )
    )
    try:
        res = alice_api.get("/v1/rest/my_trail?select=action,outcome&action=eq.create")
        assert (
            res.json() == [{"action": "create", "outcome": "allowed"}] * 3
        )  # bob's row is not hers
        res = alice_api.get("/v1/rest/my_trail?select=status")
        assert res.status_code == 400
        assert res.json()["rejection"] == {
            "code": "UNKNOWN_COLUMN",
            "field": "select",
            "message": "'status' is not a column of my_trail",
        }
    finally:
        resource_unregister("my_trail")
    assert alice_api.get("/v1/rest/my_trail").status_code == 404


def test_like_treats_glob_characters_literally(alice, alice_api):
    _create(alice, "legacy_customer", {"legacy_id": "G1", "company_name": "Q?[x] Ltd"})
    _create(alice, "legacy_customer", {"legacy_id": "G2", "company_name": "Qa[x] Ltd"})
    assert _ids(_read(alice_api, "company_name=like.Q%3F[*")) == ["G1"]
    assert _ids(_read(alice_api, "company_name=like.Q_[x]*&order=legacy_id")) == ["G1", "G2"]
    assert _ids(_read(alice_api, "company_name=ilike.q%3F[X]*")) == ["G1"]


def test_the_callers_budget_is_named_when_passed(alice, rows):
    from records.rest.errors import ResponseTooLarge
    from records.rest.execute import rest_read

    with pytest.raises(ResponseTooLarge) as info:
        rest_read(user=alice, path_and_query="legacy_customer?select=legacy_id", max_bytes=10)
    assert info.value.message == (
        "the answer to this read is larger than the read byte ceiling of 10 bytes "
        "(this read's byte budget); ask for a page with limit and offset, or filter more"
    )
