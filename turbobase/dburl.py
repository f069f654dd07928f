"""Turn DATABASE_URL into a Django DATABASES entry (SQLite or PostgreSQL only), and create a missing
PostgreSQL database before the first migrate."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlparse

# How long a request waits for a pooled connection (or a new one) before it is answered 503
# database_unavailable: a web thread never waits for a free slot (the pool is as large as the
# process's threads), so a wait this long means PostgreSQL is unreachable.
POOL_TIMEOUT_S = 5.0
# Every this long, one pooled connection above the pool's minimum that went unused is closed: a
# web process is back to one connection within a minute or two of the last busy moment.
POOL_MAX_IDLE_S = 20.0
# psycopg's pool retries a failed connect with a doubling delay until it gives up after this long;
# the next request then starts afresh. Kept short so the delay never grows past a few seconds and
# the pool is back within seconds of the database, however long the outage was.
POOL_RECONNECT_S = 10.0
CONNECT_TIMEOUT_S = "5"


def database_from_url(url: str, *, base_dir: Path, pool_size: int = 0) -> dict[str, Any]:
    """Return a DATABASES['default'] dict for ``sqlite:///path`` or ``postgres://…``.

    ``pool_size`` > 0 (web processes) gives PostgreSQL a psycopg connection pool of at most that
    many connections in this process; 0 (workers, commands, tests) keeps one persistent
    connection per thread. SQLite never pools.
    """
    parsed = urlparse(url)
    if parsed.scheme == "sqlite":
        raw = unquote(parsed.path)
        # sqlite:///var/x.sqlite3 is relative to the project, sqlite:////abs is absolute.
        path = Path(raw[1:]) if raw.startswith("/") and not raw.startswith("//") else Path(raw[1:])
        if not path.is_absolute():
            path = base_dir / path
        return {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": str(path),
            # Web and workers share the file: WAL lets readers run beside one writer,
            # IMMEDIATE takes the write lock at BEGIN so two writers queue instead of deadlocking.
            "OPTIONS": {
                "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
                "transaction_mode": "IMMEDIATE",
                "timeout": 30,
            },
            "TEST": {"NAME": str(path.with_name(path.stem + "_test.sqlite3"))},
        }
    if parsed.scheme in ("postgres", "postgresql"):
        options: dict[str, Any] = dict(parse_qsl(parsed.query))
        # An unreachable host fails in seconds (503), not after the kernel's TCP timeout.
        options.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        database = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")) or "turbobase",
            "USER": unquote(parsed.username or "postgres"),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "127.0.0.1",
            "PORT": str(parsed.port or 5432),
            "OPTIONS": options,
            "CONN_HEALTH_CHECKS": True,
        }
        if pool_size > 0:
            # Django requires CONN_MAX_AGE 0 with a pool: a request hands its connection back
            # to the pool when it ends, so a process never holds more than pool_size.
            options["pool"] = {
                "min_size": 1,
                "max_size": pool_size,
                "timeout": POOL_TIMEOUT_S,
                "max_idle": POOL_MAX_IDLE_S,
                "reconnect_timeout": POOL_RECONNECT_S,
            }
            database["CONN_MAX_AGE"] = 0
        else:
            # One persistent connection per (single-threaded) worker process: django-q2's ORM
            # broker closes "old" connections on every enqueue, which with CONN_MAX_AGE=0 means a
            # reconnect after every committed write.
            database["CONN_MAX_AGE"] = int(os.environ.get("CONN_MAX_AGE", "60"))
        return database
    raise ValueError(f"DATABASE_URL scheme {parsed.scheme!r} is not supported (sqlite or postgres)")


def postgres_database_ensure(database: dict[str, Any]) -> bool:
    """Create the PostgreSQL database ``database`` names if it is missing; True if it was created.

    Connects to the server's ``postgres`` maintenance database with the same credentials, so a
    fresh ``DATABASE_URL`` works on the first ``make run`` instead of failing in ``migrate``.
    """
    if database["ENGINE"] != "django.db.backends.postgresql":
        return False
    import psycopg
    from psycopg import sql

    options = {k: v for k, v in database["OPTIONS"].items() if k not in ("pool", "assume_role")}
    params = {
        "host": database["HOST"],
        "port": database["PORT"],
        "user": database["USER"],
        "password": database["PASSWORD"] or None,
        **options,
    }
    with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
        if conn.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [database["NAME"]]
        ).fetchone():
            return False
        try:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(database["NAME"])))
        except psycopg.errors.DuplicateDatabase:  # created by someone else meanwhile
            return False
    return True
