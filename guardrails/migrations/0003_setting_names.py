"""The upper-case instance settings get dotted names: their stored rows are renamed.

The mapping is frozen here (a migration must not follow later code); ``guardrails.setting_keys``
keeps the old names as aliases for one release. Where a row of the new name already exists it
wins, and the old row is dropped.
"""

from django.db import migrations

RENAMED = {
    "PROCESS_SLICE_MAX_ROWS": "processes.slice_max_rows",
    "PROCESS_SLICE_BATCH_ROWS": "processes.slice_batch_rows",
    "PROCESS_SLICE_MAX_MS": "processes.slice_max_ms",
    "PROCESS_QUEUE_MAX_RUNS": "processes.queue_max_runs",
}


def _rename(apps, mapping):
    setting = apps.get_model("guardrails", "InstanceSetting")
    for old, new in mapping.items():
        row = setting.objects.filter(key=old).first()
        if row is None:
            continue
        if not setting.objects.filter(key=new).exists():
            setting.objects.create(key=new, value=row.value)
        row.delete()


def names_dotted(apps, schema_editor):
    _rename(apps, RENAMED)


def names_upper(apps, schema_editor):
    _rename(apps, {new: old for old, new in RENAMED.items()})


class Migration(migrations.Migration):
    dependencies = [
        ("guardrails", "0002_guardrail"),
    ]

    operations = [migrations.RunPython(names_dotted, names_upper)]
