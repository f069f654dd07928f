"""Turn DATABASE_URL into a Django DATABASES entry (SQLite or PostgreSQL only)."""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import parse_qsl, unquote, urlparse


def database_from_url(url: str, *, base_dir: Path) -> dict:
    """Return a DATABASES['default'] dict for ``sqlite:///path`` or ``postgres://…``."""
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
        options = dict(parse_qsl(parsed.query))
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": unquote(parsed.path.lstrip("/")) or "turbobase",
            "USER": unquote(parsed.username or "postgres"),
            "PASSWORD": unquote(parsed.password or ""),
            "HOST": parsed.hostname or "127.0.0.1",
            "PORT": str(parsed.port or 5432),
            "OPTIONS": options,
            # Persistent connections: django-q2's ORM broker closes "old" connections on every
            # enqueue, which with CONN_MAX_AGE=0 means a reconnect after every committed write.
            "CONN_MAX_AGE": int(os.environ.get("CONN_MAX_AGE", "60")),
            "CONN_HEALTH_CHECKS": True,
        }
    raise ValueError(f"DATABASE_URL scheme {parsed.scheme!r} is not supported (sqlite or postgres)")
