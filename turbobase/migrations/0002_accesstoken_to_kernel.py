"""AccessToken now belongs to the kernel (``kernel.0001_initial``); the table stays."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("turbobase", "0001_initial"),
        ("kernel", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name="AccessToken")],
            database_operations=[],
        ),
    ]
