"""Reads bench: ``GET /v1/processes/queue`` and the other run reads at SMALL runs and at LARGE runs.

History is bulk-inserted ``ProcessRun`` rows (the run table is not behind the records door):
mostly committed, some failed and cancelled, a few still queued, created over the last 90 days,
invoked by two users, spread over 25 deployed processes. Every read goes through Django's test
client (middleware, authentication, DRF or the admin, the view) in this process; each size is the
median of CALLS calls after one warm-up call. (Named ``queue_reads`` so it never shadows the
standard library's ``queue``.)

The queue is read with the administrator's session (its RESULT line compares across versions);
the other API reads with a bearer token, as the CLI and apps read:

- ``run``: ``GET /v1/processes/runs/<id>`` of one run with a 20-row ledger;
- ``process runs``: ``GET /v1/processes/queue?processId=…``, one process's runs in the queue;
- ``processes``: ``GET /v1/processes`` (25 processes, each with its last five runs);
- ``admin Processes``: the admin's Processes list (``/admin/processes/process/``);
- ``CLI runs page``: ``turbobase processes runs <id>`` (the CLI's own code, over the test client),
  the whole history of one process in pages of 20 runs, reported per page it fetched.
"""

from __future__ import annotations

import contextlib
import io
import statistics
import time
from argparse import Namespace
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client

from extensions.models import ExtensionKind, ExtensionModule
from kernel.models import token_issue
from kernel.scopes import DATA_READ
from processes.models import Process, ProcessRun, ProcessRunStep, RunState
from processes.run_tally import tally_fold
from turbobase.cli import processes as cli_processes

STATES = (
    [RunState.COMMITTED] * 194
    + [RunState.FAILED] * 3
    + [RunState.CANCELLED] * 2
    + [RunState.QUEUED]
)
BATCH = 5_000
PROCESSES = 25
LEDGER_ROWS = 20
PROBED_PROCESS = "bench:queue-0"
CLI_PAGE = 20

# (key, label) of every read the table shows, the queue first.
READS = (
    ("queue", "GET /v1/processes/queue"),
    ("run", "GET /v1/processes/runs/<id> (20-row ledger)"),
    ("process_runs", "GET /v1/processes/queue?processId=…"),
    ("processes", "GET /v1/processes (25 processes)"),
    ("admin_processes", "admin Processes list"),
    ("cli_runs_page", "turbobase processes runs, per 20-run page"),
)


def runs_top_up(total: int, users: list) -> None:
    """Insert runs until the table holds ``total``, spread over 90 days of created_at."""
    missing = total - ProcessRun.objects.count()
    while missing > 0:
        n = min(missing, BATCH)
        ProcessRun.objects.bulk_create(
            [
                ProcessRun(
                    process_id=f"bench:queue-{i % PROCESSES}",
                    state=STATES[i % len(STATES)],
                    module_version=1,
                    invoked_by=users[i % len(users)],
                    input={"i": i},
                )
                for i in range(n)
            ],
            batch_size=BATCH,
        )
        missing -= n
    with connection.cursor() as cursor:
        cursor.execute(
            "UPDATE process_run SET created_at = now() - random() * interval '90 days'"
            " WHERE process_id LIKE 'bench:queue-%%' AND created_at > now() - interval '1 hour'"
        )
    # In service the run tally's deltas are folded every minute (system.processes.tally), and
    # the tables have been vacuumed: measure that, not the fold or autovacuum catching up.
    tally_fold()
    with connection.cursor() as cursor:
        for table in ("process_run", "process_run_tally", "process_run_tally_delta"):
            cursor.execute(f"VACUUM ANALYZE {table}")


def processes_deploy() -> None:
    """The 25 processes as deployed modules with their switch rows (no code: nothing runs)."""
    for i in range(PROCESSES):
        process_id = f"bench:queue-{i}"
        ExtensionModule.objects.create(
            id=process_id,
            kind=ExtensionKind.PROCESS,
            version=1,
            definition={"description": f"bench process {i}"},
        )
        Process.objects.create(id=process_id, description=f"bench process {i}")


def probed_run(user) -> ProcessRun:
    """One failed run with a 20-row ledger, the last row the refusal that ended it."""
    run = ProcessRun.objects.create(
        process_id=PROBED_PROCESS,
        state=RunState.FAILED,
        module_version=1,
        invoked_by=user,
        failed_sequence=LEDGER_ROWS,
    )
    ProcessRunStep.objects.bulk_create(
        [
            ProcessRunStep(
                run=run,
                sequence=n,
                step_id=f"s{n}",
                record_type="note",
                disposition="failed" if n == LEDGER_ROWS else "confirmed",
                refusal_code="bench_refused" if n == LEDGER_ROWS else None,
                refusal_message="refused by the bench" if n == LEDGER_ROWS else None,
            )
            for n in range(1, LEDGER_ROWS + 1)
        ]
    )
    return run


def median_ms(call: Callable[[], Any], calls: int) -> float:
    call()  # warm-up
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def get_ok(client: Client, path: str, **extra: Any) -> Any:
    res = client.get(path, **extra)
    if res.status_code != 200:
        raise RuntimeError(f"GET {path} answered {res.status_code}: {res.content[:300]!r}")
    return res


class CliOverTestClient:
    """What ``turbobase.cli`` needs of its client (``get`` answering JSON), over the test client."""

    def __init__(self, client: Client, token: str) -> None:
        self.client = client
        self.auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        self.gets = 0

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        self.gets += 1
        res = self.client.get(path, params or {}, **self.auth)
        if res.status_code != 200:
            raise RuntimeError(f"GET {path} answered {res.status_code}: {res.content[:300]!r}")
        return res.json()


def cli_runs_page_ms(cli: CliOverTestClient, calls: int) -> tuple[float, int]:
    """The CLI's whole history of one process, in ms per page fetched, and the pages it took.

    Pages of CLI_PAGE runs, so both sizes fetch full pages (at 1,000 runs the process has 41)."""
    args = Namespace(process_id=PROBED_PROCESS, json=False)
    cli_processes.HISTORY_PAGE = CLI_PAGE

    def whole_history() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            cli_processes.processes_runs(args, cli)

    cli.gets = 0
    whole_history()
    pages = cli.gets
    return median_ms(whole_history, calls) / pages, pages


@dataclass
class ReadsBench:
    small: int
    large: int
    ms: dict[str, list[float]] = field(default_factory=dict)  # key → [at small, at large]
    cli_pages: list[int] = field(default_factory=list)

    def result(self) -> dict[str, Any]:
        """The queue's RESULT line: exactly these keys."""
        ms_small, ms_large = self.ms["queue"]
        return {
            "bench": "queue",
            "ms_1k": round(ms_small, 2),
            "ms_100k": round(ms_large, 2),
            "ratio_100k_over_1k": round(ms_large / ms_small, 2),
        }


def reads_measure(
    bench: ReadsBench,
    *,
    session: Client,
    token_client: Client,
    cli: CliOverTestClient,
    run: ProcessRun,
    calls: int,
) -> None:
    bearer = cli.auth
    reads: dict[str, Callable[[], Any]] = {
        "queue": lambda: get_ok(session, "/v1/processes/queue"),
        "run": lambda: get_ok(token_client, f"/v1/processes/runs/{run.pk}", **bearer),
        "process_runs": lambda: get_ok(
            token_client, f"/v1/processes/queue?processId={PROBED_PROCESS}", **bearer
        ),
        "processes": lambda: get_ok(token_client, "/v1/processes", **bearer),
        "admin_processes": lambda: get_ok(session, "/admin/processes/process/"),
    }
    for key, read in reads.items():
        bench.ms.setdefault(key, []).append(median_ms(read, calls))
    per_page, pages = cli_runs_page_ms(cli, calls)
    bench.ms.setdefault("cli_runs_page", []).append(per_page)
    bench.cli_pages.append(pages)


def queue_bench(*, small: int = 1_000, large: int = 100_000, calls: int = 7) -> ReadsBench:
    User = get_user_model()
    admin = User.objects.create_superuser(username="bench-admin", password="bench", email="")
    other = User.objects.create_user(username="bench-other", password="bench")
    _, raw = token_issue(user=admin, scopes=[DATA_READ], name="bench")
    session = Client(HTTP_HOST="127.0.0.1")
    session.force_login(admin)
    token_client = Client(HTTP_HOST="127.0.0.1")
    cli = CliOverTestClient(token_client, raw)
    processes_deploy()
    run = probed_run(admin)
    bench = ReadsBench(small=small, large=large)
    measure = dict(session=session, token_client=token_client, cli=cli, run=run, calls=calls)
    runs_top_up(small, [admin, other])
    reads_measure(bench, **measure)
    runs_top_up(large, [admin, other])
    reads_measure(bench, **measure)
    return bench
