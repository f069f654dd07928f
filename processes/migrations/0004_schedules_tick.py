"""The schedules' ticker: every minute, fire the bundle schedules that are due
(``processes.schedules.firing.schedules_tick``). A platform job, hence the ``system.`` name that
bundle schedules may not use."""
from django.db import migrations

NAME = "system.processes.schedules"


def create_tick(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        name=NAME,
        defaults={"func": "processes.schedules.firing.schedules_tick", "schedule_type": "I", "minutes": 1,
                  "repeats": -1},
    )


def remove_tick(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("processes", "0003_schedules"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_tick, remove_tick)]
