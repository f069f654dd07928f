"""The trail's actor as plain columns (id and name), and a record's owner and group released, not
nulled by Django's deletion collector (which writes outside the records door).

The name is filled from the user each existing row points at; a row whose user is already gone
keeps its id and an empty name. The trail's foreign key constraint is dropped first, then the
column is kept as it is (same name, type and index) as a plain integer.
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models
from django.db.models import OuterRef, Subquery, Value
from django.db.models.functions import Coalesce


def actor_names_fill(apps, schema_editor):
    trail = apps.get_model("records", "WriteTrail")
    user = apps.get_model(*settings.AUTH_USER_MODEL.split("."))
    names = user.objects.filter(pk=OuterRef("actor_id")).values("username")[:1]
    trail.objects.filter(actor_id__isnull=False).update(actor_name=Coalesce(Subquery(names), Value("")))


class Migration(migrations.Migration):

    dependencies = [
        ("records", "0004_record_indexes_paid_per_create"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="writetrail",
            name="actor_name",
            field=models.CharField(blank=True, default="", max_length=150),
        ),
        migrations.RunPython(actor_names_fill, migrations.RunPython.noop),
        migrations.AlterField(
            model_name="writetrail",
            name="actor",
            field=models.ForeignKey(
                blank=True,
                null=True,
                db_constraint=False,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="writetrail", name="actor"),
                migrations.AddField(
                    model_name="writetrail",
                    name="actor_id",
                    field=models.IntegerField(blank=True, db_index=True, null=True),
                ),
            ],
        ),
        migrations.AlterField(
            model_name="record",
            name="owner",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="record",
            name="group",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.DO_NOTHING,
                related_name="+",
                to="auth.group",
            ),
        ),
    ]
