"""Sign-in failures counted per (client address, username) and per client address.

The rows counted so far (per username only, for every client) are forgotten: they are at most a
window's worth of failures, and keeping them would keep locking a username for every client.
"""

from django.db import migrations, models


def counts_forget(apps, schema_editor):
    apps.get_model("kernel", "SignInFailure").objects.all().delete()


class Migration(migrations.Migration):

    dependencies = [
        ("kernel", "0003_sign_in_failure"),
    ]

    operations = [
        migrations.RunPython(counts_forget, migrations.RunPython.noop),
        migrations.AlterModelOptions(
            name="signinfailure",
            options={"verbose_name": "sign-in lockout"},
        ),
        migrations.AddField(
            model_name="signinfailure",
            name="address",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AlterField(
            model_name="signinfailure",
            name="username",
            field=models.CharField(blank=True, max_length=150),
        ),
        migrations.AddConstraint(
            model_name="signinfailure",
            constraint=models.UniqueConstraint(
                fields=("address", "username"), name="sign_in_failure_address_username"
            ),
        ),
    ]
