"""Sign-in lockout: too many failed sign-ins from one client, and it is refused there for a while.

Failures are counted per (client address, username) — django-axes' combination — and per client
address across usernames:

- ``TURBOBASE_SIGN_IN_MAX_FAILURES`` (10) failures for one username from one address within
  ``TURBOBASE_SIGN_IN_WINDOW_S`` (900 s) lock that username *from that address* for the same
  length of time. Someone else guessing a user's password locks only their own address out: the
  user signs in from theirs. A success resets the pair's count.
- ``TURBOBASE_SIGN_IN_ADDRESS_MAX_FAILURES`` (100) failures from one address, whatever the
  usernames, within ``TURBOBASE_SIGN_IN_ADDRESS_WINDOW_S`` (900 s) lock that address for every
  username for that long: one client cannot try a password over many usernames. A success does not
  reset it (one known account must not buy more guesses at the others).

While locked, every sign-in it covers — right password or wrong — answers 429
``too_many_attempts`` with ``Retry-After``. A lock only refuses new sign-ins: sessions and tokens
already issued go on working. Usernames that do not exist are counted the same way, so the answer
never says which exist. An administrator unlocks from the admin (``sign_in_unlock``, audited).

The client address is ``REMOTE_ADDR``. Behind a reverse proxy every client would share the proxy's
address, so ``TURBOBASE_TRUSTED_PROXIES`` (addresses or networks) names the proxies whose
``X-Forwarded-For`` is believed: the client is the rightmost address in it that is not a trusted
proxy. Without that setting ``X-Forwarded-For`` is ignored — anyone can send one.

State is one ``SignInFailure`` row per (address, username) — the empty username for the address's
own count — unique, changed only with ``F()`` updates, so several web processes agree. Rejected:
django-axes — it fits Django's form login, but its lockout answer is an HTML/redirect response or
a middleware; a small table keeps the DRF JSON answer in the one exception handler. Rejected: the
cache — per-process locmem would let each web process allow its own guesses.
"""

from __future__ import annotations

import ipaddress
from datetime import datetime, timedelta
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from kernel.audit import audit_record
from kernel.codes import KernelError
from kernel.deployment import sign_in_limits, trusted_proxies
from kernel.errors import TurbobaseError
from kernel.models import SignInFailure

ANY_USERNAME = ""  # the username of an address's own row: no sign-in can name it
SIGN_IN_UNLOCKED = "sign_in.unlocked"


class SignInLocked(TurbobaseError):
    """Too many failed sign-ins from this client; try again later."""

    error: str = KernelError.TOO_MANY_ATTEMPTS
    http_status = 429
    retryable = True

    def __init__(self, *, retry_at: datetime, whole_address: bool = False) -> None:
        seconds = max(1, int((retry_at - timezone.now()).total_seconds()) + 1)
        what = "from this address" if whole_address else "for this username"
        super().__init__(f"too many failed sign-ins {what}; try again in {seconds} s")
        self.retry_at = retry_at  # the exception handler turns it into Retry-After


def _limits(username: str) -> tuple[int, timedelta]:
    """The most failures and the window (also the lock's length) of one row."""
    return sign_in_limits(whole_address=username == ANY_USERNAME)


def _unlocked(now: datetime) -> Q:
    return Q(locked_until__isnull=True) | Q(locked_until__lte=now)


Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _trusted_proxies() -> list[Network]:
    networks = []
    for proxy in trusted_proxies():
        try:
            networks.append(ipaddress.ip_network(str(proxy).strip(), strict=False))
        except ValueError:
            raise ImproperlyConfigured(
                f"TURBOBASE_TRUSTED_PROXIES: {proxy!r} is not an IP address or network"
            ) from None
    return networks


def _trusted(address: str, proxies: list[Network]) -> bool:
    try:
        ip = ipaddress.ip_address(address.strip())
    except ValueError:
        return False
    return any(ip in network for network in proxies)


def client_address(request: HttpRequest) -> str:
    """The address a sign-in comes from: ``REMOTE_ADDR``, or — only when that is one of
    ``TURBOBASE_TRUSTED_PROXIES`` — the rightmost ``X-Forwarded-For`` entry not a trusted proxy."""
    remote = (request.META.get("REMOTE_ADDR") or "").strip()
    proxies = _trusted_proxies()
    if not proxies or not _trusted(remote, proxies):
        return remote[:64]
    hops = [h.strip() for h in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if h.strip()]
    for hop in reversed(hops):
        if not _trusted(hop, proxies):
            return hop[:64]
    return (hops[0] if hops else remote)[:64]


def sign_in_lock_check(*, username: str, address: str) -> None:
    """Refuse (429 ``too_many_attempts``) a sign-in for a username locked from this address, or
    from a locked address."""
    rows = SignInFailure.objects.filter(
        address=address, username__in=(username, ANY_USERNAME), locked_until__gt=timezone.now()
    )
    lock = rows.order_by("-locked_until").first()
    if lock is not None and lock.locked_until is not None:
        raise SignInLocked(retry_at=lock.locked_until, whole_address=lock.username == ANY_USERNAME)


def sign_in_failure_record(*, username: str, address: str) -> None:
    """Count one failed sign-in for the pair and for the address; the one that reaches a limit
    locks (the pair, or the whole address)."""
    _count(address=address, username=username)
    _count(address=address, username=ANY_USERNAME)


def _count(*, address: str, username: str) -> None:
    now = timezone.now()
    most, window = _limits(username)
    rows = SignInFailure.objects.filter(address=address, username=username)
    # A window that has run out (and its lock) is forgotten, which also keeps the table small.
    rows.filter(_unlocked(now), first_failed_at__lte=now - window).delete()
    if not rows.update(failures=F("failures") + 1):
        try:
            with transaction.atomic():
                SignInFailure.objects.create(
                    address=address, username=username, failures=1, first_failed_at=now
                )
        except IntegrityError:  # another process created it first: count into its row
            rows.update(failures=F("failures") + 1)
    rows.filter(_unlocked(now), failures__gte=most).update(locked_until=now + window)


def sign_in_success_record(*, username: str, address: str) -> None:
    """A right password (while not locked) starts the pair's count again; the address's stays."""
    SignInFailure.objects.filter(address=address, username=username).delete()


def sign_in_unlock(*, rows: QuerySet[SignInFailure], by: Any) -> int:
    """Forget the counts (and locks) of ``rows``, each audited as ``sign_in.unlocked``."""
    unlocked = 0
    with transaction.atomic():
        for row in rows.select_for_update().order_by("pk"):
            audit_record(
                actor=by,
                action=SIGN_IN_UNLOCKED,
                target=f"sign_in:{row.username or '*'}@{row.address}",
                before={
                    "username": row.username or None,
                    "address": row.address,
                    "failures": row.failures,
                    "lockedUntil": row.locked_until.isoformat() if row.locked_until else None,
                },
                after=None,
            )
            row.delete()
            unlocked += 1
    return unlocked
