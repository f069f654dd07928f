"""``turbobase processes …`` and ``turbobase logs --process-run`` against a live server."""

from __future__ import annotations

import json

import pytest

from guardrails.settings import setting_set
from kernel.models import token_issue
from processes.models import ProcessRun
from tests.conftest import cli, make_user
from tests.processes.conftest import FAILS_AT_SECOND, TWO_NOTES, drain_runs, process_deploy
from turbobase.cli import processes as cli_processes


@pytest.fixture
def instance(live_server, monkeypatch):
    """A live instance with acme:two-notes deployed and an administrator's token in the environment."""
    owner = make_user("ops", admin=True)
    process_deploy(TWO_NOTES, by=owner, name="two-notes.ts")
    # extensions:deploy drives runs; data:read reads them (list, runs, run, logs).
    _, raw = token_issue(user=owner, scopes=["extensions:deploy", "data:read"])
    monkeypatch.setenv("TURBOBASE_URL", live_server.url)
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)
    return owner


def test_invoke_queued_prints_the_run_id_and_how_to_follow_it(instance, capsys):
    code, out, err = cli(
        capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "hi"}'
    )
    run = ProcessRun.objects.get()
    assert (code, err) == (0, "")
    assert (
        out
        == f"queued {run.run_id}\nfollow it: turbobase logs --process-run {run.run_id} --follow\n"
    )
    assert (run.state, run.input, run.invoked_by) == ("queued", {"memo": "hi"}, instance)


def test_invoke_from_a_file(instance, capsys, tmp_path):
    path = tmp_path / "input.json"
    path.write_text('{"memo": "from a file"}')
    code, out, _ = cli(capsys, "processes", "invoke", "acme:two-notes", "--input-file", str(path))
    assert (code, out.startswith("queued ")) == (0, True)
    assert ProcessRun.objects.get().input == {"memo": "from a file"}


def test_invoke_refusals_are_clear_and_create_nothing(instance, capsys, tmp_path):
    code, out, err = cli(capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": 1}')
    assert (code, out) == (1, "")  # nothing on stdout: the refusal is on stderr
    assert err.startswith(
        "turbobase: POST /v1/processes/acme:two-notes answered 400 invalid_input: INPUT_INVALID (memo): "
    )
    code, _, err = cli(capsys, "processes", "invoke", "acme:two-notes", "--input", "[1]")
    assert (code, err) == (
        1,
        "turbobase: --input must hold a JSON object (the process's input), not list\n",
    )
    code, _, err = cli(capsys, "processes", "invoke", "acme:two-notes", "--input", "{nope")
    assert code == 1 and err.startswith("turbobase: --input is not JSON: ")
    code, _, err = cli(
        capsys,
        "processes",
        "invoke",
        "acme:two-notes",
        "--input-file",
        str(tmp_path / "missing.json"),
    )
    assert code == 1 and "missing.json" in err
    code, _, err = cli(capsys, "processes", "invoke", "acme:nope", "--input", "{}")
    assert (code, err) == (
        1,
        "turbobase: POST /v1/processes/acme:nope answered 404 process_not_found\n",
    )
    assert ProcessRun.objects.count() == 0


def test_invoke_sync_prints_the_settled_state_and_each_step(instance, capsys, inline_worker):
    code, out, err = cli(
        capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "s"}', "--sync"
    )
    run = ProcessRun.objects.get()
    first, second = run.ledger.order_by("sequence")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"acme:two-notes {run.run_id}: committed",
        f"  #1 first salesOrder confirmed pgRowId={first.pg_row_id}",
        f"  #2 second salesOrder confirmed pgRowId={second.pg_row_id}",
    ]


def test_invoke_sync_of_a_failing_run_prints_the_refusal_and_exits_1(
    instance, capsys, inline_worker
):
    process_deploy(FAILS_AT_SECOND, by=instance, name="fails.ts")
    code, out, _ = cli(
        capsys, "processes", "invoke", "acme:fails-at-second", "--input", "{}", "--sync"
    )
    assert code == 1
    lines = out.splitlines()
    assert lines[0].endswith(": failed")
    assert lines[1] == "  reason: step 'item' failed: REQUIRED_FIELD_MISSING: legacy_id is required"
    assert lines[-1].endswith(
        "item migration_item failed — REQUIRED_FIELD_MISSING (parent.legacy_id): legacy_id is required"
    )


def test_invoke_sync_past_the_budget_says_the_run_is_still_going(instance, capsys, settings):
    # No worker runs here and the request leaves the run to the workers: it cannot settle.
    settings.PROCESS_SYNC_IN_REQUEST = False
    setting_set("processes.sync_budget_ms", 200)
    code, out, _ = cli(
        capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "s"}', "--sync"
    )
    run = ProcessRun.objects.get()
    assert code == 0
    assert out == (
        f"acme:two-notes {run.run_id} is still going (queued): it did not settle within the "
        f"instance's synchronous budget\nwatch it: turbobase logs --process-run {run.run_id} --follow\n"
    )


def test_logs_follow_ends_when_the_run_does(instance, capsys, inline_worker):
    cli(capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "f"}')
    run = ProcessRun.objects.get()
    code, out, err = cli(
        capsys, "logs", "--process-run", str(run.run_id), "--follow", "--interval", "0.05"
    )
    run.refresh_from_db()
    first, second = run.ledger.order_by("sequence")
    assert (code, err, run.state) == (0, "", "committed")
    lines = out.splitlines()
    assert lines[-3:] == [
        f"  #1 first salesOrder confirmed pgRowId={first.pg_row_id}",
        f"  #2 second salesOrder confirmed pgRowId={second.pg_row_id}",
        f"acme:two-notes {run.run_id}: committed",
    ]


def test_logs_without_follow_prints_once(instance, capsys):
    cli(capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "f"}')
    run = ProcessRun.objects.get()
    code, out, _ = cli(capsys, "logs", "--process-run", str(run.run_id))
    assert (code, out) == (0, f"acme:two-notes {run.run_id}: queued\n")


def test_list_runs_and_run(instance, capsys):
    cli(capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "l"}')
    drain_runs()
    run = ProcessRun.objects.get()
    code, out, _ = cli(capsys, "processes", "list")
    assert code == 0
    assert out.splitlines() == [
        "acme:two-notes  trigger=manual  on",
        "  Two sales orders, the second naming the first",
        f"  {run.run_id}  committed  outstanding=0",
    ]
    code, out, _ = cli(capsys, "processes", "runs", "acme:two-notes")
    assert code == 0
    assert out.startswith(f"{run.run_id}  async  committed  outstanding=0  started=")
    code, out, _ = cli(capsys, "processes", "run", str(run.run_id))
    lines = out.splitlines()
    assert lines[0] == f"acme:two-notes {run.run_id}: committed"
    assert "  invoked by: ops" in lines
    assert [line.split(" pgRowId=")[0] for line in lines if line.startswith("  #")] == [
        "  #1 first salesOrder confirmed",
        "  #2 second salesOrder confirmed",
    ]
    code, out, _ = cli(capsys, "--json", "processes", "run", str(run.run_id))
    assert json.loads(out)["run"]["runId"] == str(run.run_id)


def test_runs_pages_the_whole_history_with_cursors(instance, capsys, monkeypatch):
    monkeypatch.setattr(cli_processes, "HISTORY_PAGE", 2)  # five runs: three pages
    for n in range(5):
        cli(capsys, "processes", "invoke", "acme:two-notes", "--input", f'{{"memo": "{n}"}}')
    newest_first = ProcessRun.objects.order_by("-created_at", "-run_id")
    code, out, _ = cli(capsys, "processes", "runs", "acme:two-notes")
    assert code == 0
    assert [line.split()[0] for line in out.splitlines()] == [str(r.pk) for r in newest_first]
    code, out, _ = cli(capsys, "--json", "processes", "runs", "acme:two-notes")
    assert [run["runId"] for run in json.loads(out)] == [str(r.pk) for r in newest_first]


def test_runs_of_a_process_without_runs(instance, capsys):
    code, out, _ = cli(capsys, "processes", "runs", "acme:two-notes")
    assert (code, out) == (0, "no runs of acme:two-notes that you can see\n")


def test_cancel_rollback_and_resume(instance, capsys):
    cli(capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "c"}')
    run = ProcessRun.objects.get()
    code, out, _ = cli(capsys, "processes", "cancel", str(run.run_id))
    assert (code, out) == (0, f"{run.run_id}: cancelled\n")
    code, out, _ = cli(capsys, "processes", "rollback", str(run.run_id))
    assert (code, out) == (
        0,
        (
            f"rollback of {run.run_id} queued (running)\n"
            f"watch it: turbobase logs --process-run {run.run_id} --follow\n"
        ),
    )
    drain_runs()
    code, out, _ = cli(capsys, "processes", "rollback", str(run.run_id))
    assert (code, out) == (0, f"{run.run_id} is already rolled_back; nothing queued\n")
    code, out, err = cli(capsys, "processes", "resume", str(run.run_id))
    assert (code, out) == (1, "")
    assert err.startswith(
        f"turbobase: POST /v1/processes/runs/{run.run_id}/resume answered 409 "
        "process_run_not_resumable: "
    )
    assert "rolled_back" in err


def test_retry_and_redirect_print_the_new_run_and_the_read_shows_the_links(instance, capsys):
    cli(capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "c"}')
    old = ProcessRun.objects.get()
    code, out, err = cli(capsys, "processes", "retry", str(old.run_id))
    assert (code, out) == (1, "")
    assert "409 process_run_not_retryable" in err and "queued" in err
    code, out, _ = cli(capsys, "processes", "redirect", str(old.run_id), "--input", '{"memo": "d"}')
    new = ProcessRun.objects.get(linked_from=old)
    assert (code, new.input, new.linked_how) == (0, {"memo": "d"}, "redirect")
    assert out == (
        f"redirect of {old.run_id}: queued {new.run_id}\n"
        f"follow it: turbobase logs --process-run {new.run_id} --follow\n"
    )
    code, out, _ = cli(capsys, "processes", "retry", str(old.run_id))  # now cancelled
    retried = ProcessRun.objects.get(linked_from=old, linked_how="retry")
    assert (code, out.splitlines()[0]) == (0, f"retry of {old.run_id}: queued {retried.run_id}")
    code, out, _ = cli(capsys, "processes", "run", str(old.run_id))
    assert f"  redirect: {new.run_id}" in out and f"  retry: {retried.run_id}" in out
    code, out, _ = cli(capsys, "processes", "run", str(new.run_id))
    assert f"  redirect of: {old.run_id}" in out
    code, out, err = cli(capsys, "processes", "redirect", str(old.run_id), "--input", '{"memo": 1}')
    assert (code, ProcessRun.objects.count()) == (1, 3)
    assert "400 invalid_input" in err


def test_a_non_admin_token_is_refused_invoke(instance, live_server, monkeypatch, capsys):
    _, raw = token_issue(user=make_user("clerk"), scopes=["extensions:deploy"])
    monkeypatch.setenv("TURBOBASE_TOKEN", raw)
    code, _, err = cli(capsys, "processes", "invoke", "acme:two-notes", "--input", '{"memo": "x"}')
    assert code == 1
    assert err.startswith(
        "turbobase: POST /v1/processes/acme:two-notes answered 403 admin_required"
    )
    assert ProcessRun.objects.count() == 0
