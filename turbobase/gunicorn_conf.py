"""gunicorn's settings: ``gunicorn -c turbobase/gunicorn_conf.py turbobase.wsgi``.

Every figure comes from the environment so one file serves ``make run`` and production:
``WEB_CONCURRENCY`` processes (2) × ``TURBOBASE_WEB_THREADS`` threads (3), bound to
``HOST``:``PORT`` (127.0.0.1:8000; ``--bind`` on the command line wins). Each thread holds at most
one database connection during a request, so each process's PostgreSQL pool is as large as its
threads: the web side never holds more than processes × threads connections.
"""

import os

bind = [f"{os.environ.get('HOST', '127.0.0.1')}:{os.environ.get('PORT', '8000')}"]
workers = int(os.environ.get("WEB_CONCURRENCY", "2"))
# gunicorn's gthread worker, whose own refusals (a request line or header over the limits below,
# a control byte in a header) answer JSON with Connection: close instead of an HTML page.
worker_class = "turbobase.gunicorn_worker.JsonErrorThreadWorker"
threads = int(os.environ.get("TURBOBASE_WEB_THREADS", "3"))
os.environ.setdefault("TURBOBASE_DB_POOL_SIZE", str(threads))
# SIGTERM: stop accepting, finish the requests in hand for at most this long, then exit.
graceful_timeout = int(os.environ.get("TURBOBASE_WEB_GRACEFUL_S", "5"))
# A request may run this long before its worker is recycled (a large extension deploy compiles).
timeout = int(os.environ.get("TURBOBASE_WEB_TIMEOUT_S", "120"))
keepalive = 2
# gunicorn's defaults, named: what one connection may make the server buffer before Django runs.
limit_request_line = 4094  # bytes of "METHOD /path?query HTTP/1.1"
limit_request_field_size = 8190  # bytes of one header line
limit_request_fields = 100  # headers in one request
# gunicorn 25+ opens a control socket at one fixed per-user path; two instances would collide.
control_socket_disable = True
# Access log on stdout ("-"), a file path, or "" for none.
accesslog = os.environ.get("TURBOBASE_ACCESS_LOG", "-") or None
errorlog = "-"
loglevel = os.environ.get("TURBOBASE_WEB_LOG_LEVEL", "info")

# TURBOBASE_LOG_FORMAT=json: gunicorn's own lines (its errors, the access log) are JSON objects too,
# as Django's are (settings.LOGGING).
if os.environ.get("TURBOBASE_LOG_FORMAT", "").strip().lower() == "json":
    _json = {
        "()": "pythonjsonlogger.json.JsonFormatter",
        "fmt": "%(asctime)s %(levelname)s %(name)s %(message)s",
        "rename_fields": {"asctime": "time", "levelname": "level", "name": "logger"},
    }
    logconfig_dict = {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": _json},
        "handlers": {
            "console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stdout",
            },
            "error_console": {
                "class": "logging.StreamHandler",
                "formatter": "json",
                "stream": "ext://sys.stderr",
            },
        },
        "loggers": {
            "gunicorn.error": {
                "level": loglevel.upper(),
                "handlers": ["error_console"],
                "propagate": False,
                "qualname": "gunicorn.error",
            },
            "gunicorn.access": {
                "level": "INFO",
                "handlers": ["console"],
                "propagate": False,
                "qualname": "gunicorn.access",
            },
        },
    }
