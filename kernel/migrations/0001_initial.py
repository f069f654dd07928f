"""AccessToken moves from the project shell (app ``turbobase``) to the kernel.

The table (``access_token``) was created by ``turbobase.0001_initial`` and is kept as it is: this
migration only moves the model in Django's state, so existing instances keep their tokens.
"""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("turbobase", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="AccessToken",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                        ("name", models.CharField(blank=True, default="", max_length=100)),
                        ("token_hash", models.CharField(max_length=64, unique=True)),
                        ("prefix", models.CharField(max_length=12)),
                        ("scopes", models.JSONField(default=list)),
                        ("created_at", models.DateTimeField(auto_now_add=True)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("revoked_at", models.DateTimeField(blank=True, null=True)),
                        ("user", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="access_tokens", to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "access_token"},
                ),
            ],
            database_operations=[],
        ),
    ]
