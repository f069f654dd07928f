"""The platform's recurring sweep: every minute, wake any outbound lane with due work and no drain.

It catches what a wake-up can miss: a broker that was down when a write committed, a worker that
died holding a lane (its lease runs out), a retry schedule lost with a database restore.
"""
from django.db import migrations

NAME = "system.sources.sweep"


def create_sweep(apps, schema_editor):
    Schedule = apps.get_model("django_q", "Schedule")
    Schedule.objects.get_or_create(
        name=NAME,
        defaults={"func": "sources.tasks.outbound_sweep_task", "schedule_type": "I", "minutes": 1,
                  "repeats": -1},
    )


def remove_sweep(apps, schema_editor):
    apps.get_model("django_q", "Schedule").objects.filter(name=NAME).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("sources", "0001_initial"),
        ("django_q", "0019_alter_task_options_alter_ormq_key_alter_ormq_lock_and_more"),
    ]

    operations = [migrations.RunPython(create_sweep, remove_sweep)]
