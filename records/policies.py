"""Row-level security: the one place that decides which records a user may see and change.

A record carries ``owner`` and ``group``. The type's policy decides:
``all`` — everyone signed in; ``group`` — the owner, or anyone in the record's group;
``owner`` — the owner only. Administrators (``is_staff``) see and change everything.
"""

from __future__ import annotations

from django.contrib.auth.models import Group, User
from django.db.models import Q, QuerySet

from records.catalog import RecordType
from records.errors import WriteNotEntitled
from records.models import HIDDEN_STATES, Record


def policy_q(user: User, policy: str, *, prefix: str = "") -> Q:
    """The rows ``policy`` lets ``user`` read; ``prefix`` reaches the record from a related row."""
    if getattr(user, "is_staff", False) or policy == "all":
        return Q()
    if policy == "group":
        return Q(**{f"{prefix}owner_id": user.pk}) | Q(**{f"{prefix}group__in": user.groups.all()})
    return Q(**{f"{prefix}owner_id": user.pk})


def records_visible(*, user: User, record_type: RecordType) -> QuerySet[Record]:
    """Records of ``record_type`` the user may read (hidden ones never)."""
    return (
        Record.reads.filter(record_type=record_type.name)
        .exclude(sync_state__in=HIDDEN_STATES)
        .filter(policy_q(user, record_type.read_policy))
    )


def records_writable(*, user: User, record_type: RecordType) -> QuerySet[Record]:
    """Records the user may change or delete: visible to them and inside the type's write policy."""
    return records_visible(user=user, record_type=record_type).filter(
        policy_q(user, record_type.write_policy)
    )


def write_entitlement_check(*, user: User, record_type: RecordType) -> None:
    """Refuse a user who may not write this type at all (the type's ``writeGroups``)."""
    if not record_type.write_groups or getattr(user, "is_staff", False):
        return
    if not user.groups.filter(name__in=record_type.write_groups).exists():
        raise WriteNotEntitled(
            f"writing {record_type.name} needs membership of one of: {', '.join(record_type.write_groups)}",
            field=None,
        )


def default_group(user: User) -> Group | None:
    """The group a new record is filed under: the user's first group by name.

    Remembered on the user object, which lives for one request or one run delivery (in the
    instance's ``__dict__``, as ``cached_property`` does).
    """
    memo = user.__dict__
    if "_tb_default_group" not in memo:
        memo["_tb_default_group"] = user.groups.order_by("name").first()
    return memo["_tb_default_group"]


def default_group_known(user: User, group: Group | None) -> None:
    """Remember ``group`` as the user's ``default_group``, read by the caller with something else
    (a run's claim reads its invoker's with the run): no read of its own later."""
    user.__dict__["_tb_default_group"] = group
