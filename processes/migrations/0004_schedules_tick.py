"""Superseded: system schedules are declared once, in the owning room's ``ready()``, and created
by ``manage.py qcluster`` at start (``kernel.system_schedules``). Kept as a no-op so migration
histories stay valid.

Was: The schedules' ticker: every minute, fire the bundle schedules that are due
(``processes.schedules.firing.schedules_tick``). A platform job, hence the ``system.`` name that
bundle schedules may not use."""
from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("processes", "0003_schedules"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(migrations.RunPython.noop, migrations.RunPython.noop)]
