"""A user or group deleted: the records it owned or held stay, released through the door, audited.

Django's deletion collector would null ``Record.owner`` / ``Record.group`` with an UPDATE outside
the records door (``DoorClosed``: the admin's HTML 500, a shell's traceback). So both foreign keys
are ``DO_NOTHING`` and these ``pre_delete`` receivers — run inside the deletion's own transaction,
for the admin's delete, its bulk action and ``User.objects.get(...).delete()`` alike — release the
records through the door and write one audit event, so the deletion, the release and its audit
commit or roll back together. The database's foreign keys still refuse any other way round.

What it means for row-level security (``records.policies``): a record whose owner was deleted has
no owner. ``owner``-policy records are then seen and changed by administrators only; ``group``
ones by the record's group as before; ``all`` ones by everyone as before. A new account never
inherits them (the owner is empty, and user ids are never reused). The write trail is not touched:
its actor is plain columns (id and name) that outlive the user. Runs the user invoked keep their
ledger (``ProcessRun.invoked_by`` is nulled by Django, outside this door).
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import Group, User
from django.db import transaction
from django.db.models.signals import pre_delete

from kernel.audit import audit_record
from kernel.users import operator_current
from records.door import door_opened
from records.models import Record

USER_DELETED = "user.deleted"
GROUP_DELETED = "group.deleted"


@door_opened
def records_owner_release(*, user: User) -> int:
    """Release ``user``'s records (owner emptied) and audit the user's deletion; the count released."""
    with transaction.atomic():
        # Locked first: a record created for this owner meanwhile waits, then fails, instead of
        # failing the deletion at commit (PostgreSQL; SQLite serialises writers anyway).
        list(User.objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
        released = Record.objects.filter(owner_id=user.pk).update(owner=None)
        audit_record(
            actor=operator_current(),
            action=USER_DELETED,
            target=f"user:{user.pk}",
            before={"username": user.get_username(), "recordsOwned": released},
            after={"recordsOwner": None},
        )
    return released


@door_opened
def records_group_release(*, group: Group) -> int:
    """Release the records filed under ``group`` (group emptied) and audit its deletion."""
    with transaction.atomic():
        list(Group.objects.select_for_update().filter(pk=group.pk).values_list("pk", flat=True))
        released = Record.objects.filter(group_id=group.pk).update(group=None)
        audit_record(
            actor=operator_current(),
            action=GROUP_DELETED,
            target=f"group:{group.pk}",
            before={"name": group.name, "recordsFiled": released},
            after={"recordsGroup": None},
        )
    return released


def _user_deleting(sender: Any, instance: User, **kwargs: Any) -> None:
    records_owner_release(user=instance)


def _group_deleting(sender: Any, instance: Group, **kwargs: Any) -> None:
    records_group_release(group=instance)


def releases_connect() -> None:
    """Called once from ``RecordsConfig.ready()``."""
    pre_delete.connect(_user_deleting, sender=User, dispatch_uid="records.releases.user")
    pre_delete.connect(_group_deleting, sender=Group, dispatch_uid="records.releases.group")
