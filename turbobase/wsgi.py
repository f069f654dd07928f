"""WSGI entry point (gunicorn: ``gunicorn -c turbobase/gunicorn_conf.py turbobase.wsgi``)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "turbobase.settings")
# A web process pools its PostgreSQL connections (bounded per process); gunicorn_conf.py sizes the
# pool to the process's threads before this runs, any other WSGI server gets this default.
os.environ.setdefault("TURBOBASE_DB_POOL_SIZE", "3")
application = get_wsgi_application()
