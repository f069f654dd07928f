"""Sign-in lockout: too many failed sign-ins for one username, and it is refused for a while.

After ``TURBOBASE_SIGN_IN_MAX_FAILURES`` (10) failures within ``TURBOBASE_SIGN_IN_WINDOW_S``
(900 s) the username is locked for the same length of time: every sign-in for it — right password
or wrong — answers 429 ``too_many_attempts`` with ``Retry-After``. A success resets the count.
Usernames that do not exist are counted the same way, so the answer never says which exist.

State is one ``SignInFailure`` row per username, unique, changed only with ``F()`` updates, so
several web processes agree. Rejected: django-axes — it fits Django's form login, but its lockout
answer is an HTML/redirect response or a middleware, and it keys on IP and user agent by default;
a 60-line table keeps the DRF JSON answer in the one exception handler. Rejected: the cache —
per-process locmem would let each web process allow its own ten guesses.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from kernel.errors import TurbobaseError
from kernel.models import SignInFailure


class SignInLocked(TurbobaseError):
    """Too many failed sign-ins for this username; try again later."""

    error = "too_many_attempts"
    http_status = 429
    retryable = True

    def __init__(self, *, retry_at: datetime) -> None:
        seconds = max(1, int((retry_at - timezone.now()).total_seconds()) + 1)
        super().__init__(f"too many failed sign-ins for this username; try again in {seconds} s")
        self.retry_at = retry_at  # the exception handler turns it into Retry-After


def _max_failures() -> int:
    return int(getattr(settings, "TURBOBASE_SIGN_IN_MAX_FAILURES", 10))


def _window() -> timedelta:
    return timedelta(seconds=int(getattr(settings, "TURBOBASE_SIGN_IN_WINDOW_S", 900)))


def _unlocked(now: datetime) -> Q:
    return Q(locked_until__isnull=True) | Q(locked_until__lte=now)


def sign_in_lock_check(*, username: str) -> None:
    """Refuse (429 ``too_many_attempts``) a sign-in for a username that is locked out."""
    locked_until = (
        SignInFailure.objects.filter(username=username, locked_until__gt=timezone.now())
        .values_list("locked_until", flat=True)
        .first()
    )
    if locked_until is not None:
        raise SignInLocked(retry_at=locked_until)


def sign_in_failure_record(*, username: str) -> None:
    """Count one failed sign-in; the one that reaches the limit locks the username."""
    now = timezone.now()
    window = _window()
    # Windows that have run out (and their locks) are forgotten, which also keeps the table small.
    SignInFailure.objects.filter(_unlocked(now), first_failed_at__lte=now - window).delete()
    if not SignInFailure.objects.filter(username=username).update(failures=F("failures") + 1):
        try:
            with transaction.atomic():
                SignInFailure.objects.create(username=username, failures=1, first_failed_at=now)
        except IntegrityError:  # another process created it first: count into its row
            SignInFailure.objects.filter(username=username).update(failures=F("failures") + 1)
    (
        SignInFailure.objects.filter(
            _unlocked(now), username=username, failures__gte=_max_failures()
        ).update(locked_until=now + window)
    )


def sign_in_success_record(*, username: str) -> None:
    """A right password (while not locked) starts the count again."""
    SignInFailure.objects.filter(username=username).delete()
