"""Superseded: system schedules are declared once, in the owning room's ``ready()``, and created
by ``manage.py qcluster`` at start (``kernel.system_schedules``). Kept as a no-op so migration
histories stay valid.

Was: The platform's recurring sweep: every minute, wake any outbound lane with due work and no drain.

It catches what a wake-up can miss: a broker that was down when a write committed, a worker that
died holding a lane (its lease runs out), a retry schedule lost with a database restore.
"""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
