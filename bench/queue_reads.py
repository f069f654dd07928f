"""Reads bench: ``GET /v1/processes/queue`` and the other run reads at SMALL runs and at LARGE runs.

History is bulk-inserted ``ProcessRun`` rows (the run table is not behind the records door):
mostly committed, some failed and cancelled, a few still queued, created over the last 90 days,
invoked by two users, spread over 25 deployed processes. Every read goes through Django's test
client (middleware, authentication, DRF or the admin, the view) in this process; each size is the
median of CALLS calls after one warm-up call. The small size is measured twice, before the large
one and again after cutting the runs back to the same ones, and its median takes both rounds.
(Named ``queue_reads`` so it never shadows the standard library's ``queue``.)

The queue is read with the administrator's session (its RESULT line compares across versions);
the other API reads with a bearer token, as the CLI and apps read:

- ``run``: ``GET /v1/processes/runs/<id>`` of one run with a 20-row ledger;
- ``process runs``: ``GET /v1/processes/queue?processId=…``, one process's runs in the queue (it
  lists 41 runs at 1,000 and 500 at 100,000: part of its ratio is the longer answer);
- ``processes``: ``GET /v1/processes`` (25 processes, each with its last five runs);
- ``admin Processes``: the admin's Processes list (``/admin/processes/process/``);
- ``turbobase processes runs <id>`` (the CLI's own code, over the test client) walking the whole
  history of one process in pages of 20 runs, each page timed: its first page (a process's 20
  newest runs), and every full page (the deep ones are what paging by OFFSET made slow).
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
    ("process_runs", "…/queue?processId=… (its runs, up to 500)"),
    ("runs_first_page", "a process's 20 newest runs (CLI's first page)"),
    ("cli_runs_page", "CLI runs: any full 20-run page, deep ones too"),
    ("processes", "GET /v1/processes (25 processes)"),
    ("admin_processes", "admin Processes list"),
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
    table_settle()


def runs_cut_back(kept: list) -> None:
    """Back to the small size: every run but ``kept`` deleted (bench runs have no ledger)."""
    with connection.cursor() as cursor:
        cursor.execute("DELETE FROM process_run WHERE NOT (run_id = ANY(%s))", [kept])
    table_settle()


def table_settle() -> None:
    """In service the run tally's deltas are folded every minute (system.processes.tally) and the
    tables have been vacuumed: measure that, not the fold or autovacuum catching up."""
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


def samples_ms(call: Callable[[], Any], calls: int, *, per: int = 1) -> list[float]:
    """``calls`` timings of ``call`` after one warm-up, in ms (divided by ``per``)."""
    call()  # warm-up
    times = []
    for _ in range(calls):
        started = time.perf_counter()
        call()
        times.append((time.perf_counter() - started) * 1000 / per)
    return times


def get_ok(client: Client, path: str, **extra: Any) -> Any:
    res = client.get(path, **extra)
    if res.status_code != 200:
        raise RuntimeError(f"GET {path} answered {res.status_code}: {res.content[:300]!r}")
    return res


class CliOverTestClient:
    """What ``turbobase.cli`` needs of its client (``get`` answering JSON), over the test client;
    it times every page it fetches: (ms, runs on the page)."""

    def __init__(self, client: Client, token: str) -> None:
        self.client = client
        self.auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
        self.pages: list[tuple[float, int]] = []

    def get(self, path: str, params: dict[str, Any] | None = None) -> Any:
        started = time.perf_counter()
        res = self.client.get(path, params or {}, **self.auth)
        ms = (time.perf_counter() - started) * 1000
        if res.status_code != 200:
            raise RuntimeError(f"GET {path} answered {res.status_code}: {res.content[:300]!r}")
        body = res.json()
        self.pages.append((ms, len(body["runs"] if isinstance(body, dict) else body)))
        return body


def cli_pages_ms(cli: CliOverTestClient, calls: int) -> tuple[list[float], list[float], int]:
    """``turbobase processes runs`` over one process's whole history, ``calls`` times, in pages of
    CLI_PAGE runs: the first page's timings, every full page's (deep ones included), and the
    pages one walk takes."""
    args = Namespace(process_id=PROBED_PROCESS, json=False, where=[], state=[])
    cli_processes.HISTORY_PAGE = CLI_PAGE
    first: list[float] = []
    full: list[float] = []
    walks = []
    for n in range(calls + 1):
        cli.pages = []
        with contextlib.redirect_stdout(io.StringIO()):
            cli_processes.processes_runs(args, cli)
        walks.append(len(cli.pages))
        if n == 0:
            continue  # warm-up
        first.append(cli.pages[0][0])
        full.extend(ms for ms, runs in cli.pages if runs == CLI_PAGE)
    return first, full, walks[0]


@dataclass
class ReadsBench:
    small: int
    large: int
    # key → size ("small" / "large") → every timing taken at that size, in ms
    samples: dict[str, dict[str, list[float]]] = field(default_factory=dict)
    cli_pages: dict[str, int] = field(default_factory=dict)

    def ms(self, key: str) -> tuple[float, float]:
        """The medians at the small and at the large size."""
        sizes = self.samples[key]
        return statistics.median(sizes["small"]), statistics.median(sizes["large"])

    def result(self) -> dict[str, Any]:
        """The queue's RESULT line: exactly these keys."""
        ms_small, ms_large = self.ms("queue")
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
    size: str,
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
        bench.samples.setdefault(key, {}).setdefault(size, []).extend(samples_ms(read, calls))
    first, full, pages = cli_pages_ms(cli, calls)
    bench.samples.setdefault("runs_first_page", {}).setdefault(size, []).extend(first)
    bench.samples.setdefault("cli_runs_page", {}).setdefault(size, []).extend(full)
    bench.cli_pages[size] = pages


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
    # Small, large, small again: the small size's timings bracket the large one's, so a change of
    # load on a shared machine during the run moves both sides of the ratio alike.
    runs_top_up(small, [admin, other])
    reads_measure(bench, size="small", **measure)
    kept = list(ProcessRun.objects.values_list("pk", flat=True))
    runs_top_up(large, [admin, other])
    reads_measure(bench, size="large", **measure)
    runs_cut_back(kept)
    reads_measure(bench, size="small", **measure)
    return bench
