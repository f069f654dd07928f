"""Turbobase settings: everything that differs between machines comes from the environment."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from kernel.log_context import logging_config
from turbobase.dburl import database_from_url

BASE_DIR = Path(__file__).resolve().parent.parent
VAR_DIR = Path(os.environ.get("TURBOBASE_VAR", BASE_DIR / "var"))
VAR_DIR.mkdir(parents=True, exist_ok=True)
# Prometheus multiprocess mode (kernel.metrics): every process counts into files here and one
# scrape adds them up. Set before anything imports prometheus_client (it reads it at import).
os.environ.setdefault("PROMETHEUS_MULTIPROC_DIR", str(VAR_DIR / "prometheus"))
Path(os.environ["PROMETHEUS_MULTIPROC_DIR"]).mkdir(parents=True, exist_ok=True)


def _env_bool(name: str, default: bool) -> bool:
    return os.environ.get(name, str(default)).strip().lower() in ("1", "true", "yes", "on")


DEBUG = _env_bool("DEBUG", False)
# The development key is only used when nobody set one; production sets SECRET_KEY.
SECRET_KEY = os.environ.get("SECRET_KEY", "turbobase-insecure-development-key-change-me")
ALLOWED_HOSTS = [h for h in os.environ.get("ALLOWED_HOSTS", "*").split(",") if h]
CSRF_TRUSTED_ORIGINS = [o for o in os.environ.get("CSRF_TRUSTED_ORIGINS", "").split(",") if o]
# The reverse proxies whose X-Forwarded-For names the client (kernel.sign_in.client_address):
# addresses or networks, comma-separated. Empty: the client is REMOTE_ADDR, X-Forwarded-For ignored.
TURBOBASE_TRUSTED_PROXIES = [
    p.strip() for p in os.environ.get("TURBOBASE_TRUSTED_PROXIES", "").split(",") if p.strip()
]

INSTALLED_APPS = [
    "turbobase.admin_site.TurbobaseAdminConfig",  # django.contrib.admin with our own site
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",  # Swagger UI served from our own static files: /api/docs works offline
    "kernel",
    # Before django_q: our ``qcluster`` command starts every lane's cluster.
    "turbobase",
    "django_q",
    "extensions",
    "guardrails",
    "guardrails.instance_settings",  # the admin's "Settings" section (Settings → Write guardrails)
    "records",
    "sources",
    "processes",
]

MIDDLEWARE = [
    # First: the request's id on every log line and on its answer; its route and status counted.
    "kernel.request_observe.RequestObserveMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Static files (the admin's CSS/JS, the API docs) straight from the web process, DEBUG or not.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "kernel.middleware.RequestTextMiddleware",  # NUL / lone surrogates in path or query → 400
    # Last, so it sees every view's exception: an unreachable database is a JSON 503, not a 500.
    "turbobase.unavailable.DatabaseUnavailableMiddleware",
]

ROOT_URLCONF = "turbobase.urls"
WSGI_APPLICATION = "turbobase.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": database_from_url(
        os.environ.get("DATABASE_URL", "sqlite:///var/turbobase.sqlite3"),
        base_dir=BASE_DIR,
        # Set by the web server's entry points (turbobase/wsgi.py, gunicorn_conf.py): a pool of at
        # most this many PostgreSQL connections per web process. Unset: no pool (workers, commands).
        # Never in qcluster, even if set: django-q2 forks, and a forked pool is shared by both sides.
        pool_size=0
        if sys.argv[1:2] == ["qcluster"]
        else int(os.environ.get("TURBOBASE_DB_POOL_SIZE", "0")),
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True
STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns about a missing root; tb_run fills it
# Collected by ``manage.py tb_prepare`` / ``tb_run`` (collectstatic), served by WhiteNoise.
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
TURBOBASE_INSTANCE_NAME = os.environ.get("TURBOBASE_INSTANCE_NAME", "Turbobase")

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "kernel.auth.BearerTokenAuthentication",
        "kernel.auth.CsrfSessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["kernel.permissions.ScopedAccess"],  # views declare scopes
    "DEFAULT_PARSER_CLASSES": [  # DRF's, bounded in depth and refusing NUL / lone surrogates
        "kernel.parsers.JSONParser",
        "kernel.parsers.FormParser",
        "kernel.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "kernel.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "kernel.http.exception_handler",
    "UNAUTHENTICATED_USER": "django.contrib.auth.models.AnonymousUser",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Turbobase API",
    "DESCRIPTION": "Records, the write boundary, extensions and processes.",
    "VERSION": "0.1.0",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Tags by the segment after /v1: data, batch, rest, guardrails, extensions, processes, auth…
    "SCHEMA_PATH_PREFIX": r"/v1",
    "SERVE_INCLUDE_SCHEMA": False,  # /api/schema itself is not part of the API it describes
    # PATCH /v1/data names its record and sends the fields to change: not a partial resource.
    "COMPONENT_SPLIT_PATCH": False,
    # Fields named alike in different rooms (kind, status) get an enum named for what they are.
    "ENUM_NAME_OVERRIDES": {
        "ExtensionKindEnum": "extensions.models.ExtensionKind",
        "ExtensionStatusEnum": "extensions.models.ExtensionStatus",
        "HeldStatusEnum": "guardrails.models.HeldStatus",
        "RunStateEnum": "processes.models.RunState",
        "BulkStateEnum": "processes.bulk.models.BulkState",
        "BulkVerbEnum": "processes.bulk.models.BulkVerb",
        "TaskStateEnum": "processes.human_tasks.models.TaskState",
        "TriggerKindEnum": ["manual", "schedule"],
        "HealthStatusEnum": ["ok"],
        "SyncBudgetExceededEnum": ["sync_budget_exceeded"],
    },
}

# Record catalog: a JSON file; the shipped default holds the seed's record types.
TURBOBASE_CATALOG = os.environ.get("TURBOBASE_CATALOG", str(BASE_DIR / "records" / "catalog.json"))

_BROKER = os.environ.get("TURBOBASE_BROKER", "orm")
# One cluster per lane: "turbobase" (outbound writes, sweeps), "tb_sync" (interactive runs) and
# "tb_async" (everything else, migration slices included): separate pools, separate limits.
# A slice may run processes.slice_max_ms (10 min) and finishes its row, hence the task timeout.
_Q_TIMEOUT = int(os.environ.get("TURBOBASE_TASK_TIMEOUT", "900"))
Q_CLUSTER = {
    "name": "turbobase",
    "workers": int(os.environ.get("TURBOBASE_WORKERS", "2")),
    "timeout": _Q_TIMEOUT,
    # A delivery whose worker died is handed out again after this long (must exceed timeout).
    "retry": int(os.environ.get("TURBOBASE_TASK_RETRY", str(_Q_TIMEOUT + 60))),
    "ALT_CLUSTERS": {
        "tb_sync": {"workers": int(os.environ.get("TURBOBASE_SYNC_WORKERS", "2"))},
        "tb_async": {"workers": int(os.environ.get("TURBOBASE_ASYNC_WORKERS", "2"))},
    },
    "max_attempts": 0,
    "ack_failures": True,
    "catch_up": False,
    "poll": 0.2,
    "save_limit": 1000,
    "label": "Django Q2",
}
if _BROKER.startswith("redis://"):
    Q_CLUSTER["redis"] = _BROKER
else:
    Q_CLUSTER["orm"] = "default"

# How long a delivery holds a run before another may take it over (its worker died): a live
# delivery renews it every third of this; a lost one is sent again about this long after.
PROCESS_RUN_LEASE_S = int(os.environ.get("TURBOBASE_RUN_LEASE_S", "120"))
# ?mode=sync: the request delivers the run itself (processes/sync_run.py); 0 leaves every sync
# run to the tb_sync lane's workers, the request waiting for the settle notice.
# Where each purged run is archived (processes.history), one gzip of JSON lines a day; unset, purged
# runs are not archived. A filesystem path of this machine is the deployment's, not an API setting.
TURBOBASE_HISTORY_ARCHIVE_DIR = os.environ.get("TURBOBASE_HISTORY_ARCHIVE_DIR", "").strip() or None
PROCESS_SYNC_IN_REQUEST = os.environ.get("TURBOBASE_SYNC_IN_REQUEST", "1") != "0"
# How long a drain that died blocks its record type's outbound lane.
SOURCES_LANE_LEASE_SECONDS = float(os.environ.get("TURBOBASE_SOURCES_LANE_LEASE_S", "120"))

# TURBOBASE_LOG_FORMAT=json: one JSON object per line, with run_id, step_id, process_id and
# request_id where they apply (kernel.log_context).
LOGGING = logging_config(
    os.environ.get("TURBOBASE_LOG_FORMAT", "text").strip().lower(),
    os.environ.get("LOG_LEVEL", "WARNING"),
)

# GET /metrics without a token: from these addresses or networks (comma-separated, e.g.
# "127.0.0.1,10.0.0.0/8"); none by default. A token with the metrics:read scope reads it anywhere.
TURBOBASE_METRICS_ALLOW = [
    a.strip() for a in os.environ.get("TURBOBASE_METRICS_ALLOW", "").split(",") if a.strip()
]
# Traces (kernel.tracing) are recorded only when OTEL_EXPORTER_OTLP_ENDPOINT is set; the standard
# OTEL_* variables configure the exporter and OTEL_SERVICE_NAME (default "turbobase").
