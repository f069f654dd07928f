"""Superseded: system schedules are declared once, in the owning room's ``ready()``, and created
by ``manage.py qcluster`` at start (``kernel.system_schedules``). Kept as a no-op so migration
histories stay valid.

Was: The engine's recurring sweep: every minute, re-queue parked runs that are due (a wait budget
ran out, a clock came, a verdict's wake-up was lost) and runs whose worker died."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("processes", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
