"""records.rest.parser: PostgREST syntax into a typed query; refusals name the parameter."""

from __future__ import annotations

import pytest

from records.rest.errors import InvalidQuery, RpcNotSupported
from records.rest.parser import Filter, Operator, OrderTerm, RestQuery, SelectItem, query_parse


def test_full_query_parses():
    q = query_parse(
        "/legacy_customer?select=pg_row_id,name:company_name&status=not.eq.done&n=gte.2.5"
        "&tag=in.(a,%22b,c%22,)&gone=is.NULL&order=n.desc,company_name.asc.nullsfirst&limit=5&offset=10"
    )
    assert q == RestQuery(
        resource="legacy_customer",
        select=(SelectItem("pg_row_id", "pg_row_id"), SelectItem("company_name", "name")),
        filters=(
            Filter("status", Operator.EQ, "done", is_negated=True),
            Filter("n", Operator.GTE, "2.5"),
            Filter("tag", Operator.IN, ("a", "b,c", "")),
            Filter("gone", Operator.IS, "null"),
        ),
        order=(OrderTerm("n", is_descending=True), OrderTerm("company_name", nulls_first=True)),
        limit=5,
        offset=10,
    )


def test_value_keeps_its_dots_and_plus_is_a_space():
    q = query_parse("entity?external_id=eq.a.b.c&name=eq.A+B")
    assert q.filters == (
        Filter("external_id", Operator.EQ, "a.b.c"),
        Filter("name", Operator.EQ, "A B"),
    )


def test_empty_in_list_and_quoted_escape():
    q = query_parse('x?a=in.()&b=in.("q\\"x",y)')
    assert q.filters == (Filter("a", Operator.IN, ()), Filter("b", Operator.IN, ('q"x', "y")))


@pytest.mark.parametrize(
    ("query", "code", "field"),
    [
        ("x?a=between.1", "UNKNOWN_OPERATOR", "a"),
        ("x?a=1", "UNKNOWN_OPERATOR", "a"),
        ("x?a=eq", "INVALID_VALUE", "a"),
        ("x?a=is.maybe", "INVALID_VALUE", "a"),
        ("x?a=in.a,b", "INVALID_VALUE", "a"),
        ('x?a=in.("a,b)', "INVALID_VALUE", "a"),
        ("x?limit=-1", "INVALID_LIMIT", "limit"),
        ("x?limit=ten", "INVALID_LIMIT", "limit"),
        ("x?limit=", "INVALID_LIMIT", "limit"),
        ("x?offset=1.5", "INVALID_OFFSET", "offset"),
        ("x?limit=1&limit=2", "DUPLICATE_PARAMETER", "limit"),
        ("x?order=a.sideways", "INVALID_ORDER", "order"),
        ("x?order=a.desc.asc", "INVALID_ORDER", "order"),
        ("x?select=a,other(*)", "INVALID_SELECT", "select"),
        ("x?select=a::text", "INVALID_SELECT", "select"),
        ("x?select=a,", "INVALID_SELECT", "select"),
        ("x?select=bad-name", "UNKNOWN_COLUMN", "select"),
        ("x?bad-name=eq.1", "UNKNOWN_COLUMN", "bad-name"),
        ("x?or=(a.eq.1,b.eq.2)", "UNSUPPORTED_PARAMETER", "or"),
        ("a/b", "INVALID_PATH", "path"),
        ("", "INVALID_PATH", "path"),
    ],
)
def test_bad_syntax_is_refused_naming_the_parameter(query, code, field):
    with pytest.raises(InvalidQuery) as info:
        query_parse(query)
    assert (info.value.error, info.value.code, info.value.field) == ("invalid_query", code, field)


def test_rpc_path_is_refused():
    with pytest.raises(RpcNotSupported) as info:
        query_parse("rpc/delete_everything?x=1")
    assert info.value.body() == {
        "error": "rpc_not_supported",
        "rejection": {
            "code": "RPC_NOT_SUPPORTED",
            "field": "path",
            "message": "rpc/ paths name stored procedures, which this read never calls; read a resource instead",
        },
    }
