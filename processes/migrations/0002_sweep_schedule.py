"""The engine's recurring sweep: every minute, re-queue parked runs that are due (a wait budget
ran out, a clock came, a verdict's wake-up was lost) and runs whose worker died."""
from django.db import migrations

NAME = "system.processes.sweep"


def create_sweep(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        name=NAME,
        defaults={"func": "processes.tasks.runs_sweep", "schedule_type": "I", "minutes": 1, "repeats": -1},
    )


def remove_sweep(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("processes", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_sweep, remove_sweep)]
