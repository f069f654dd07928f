"""``turbobase ext deploy``, ``plan`` and ``remove``: the online verbs.

They talk to the instance named by TURBOBASE_URL with TURBOBASE_TOKEN, or with ``--to ENV`` to an
environment from ``turbobase.config.json``, the whole project as one plan.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any
from urllib.parse import quote

from extensions.project import declared_ids, extension_files, project_bundle
from turbobase.cli.base import CliError, emit
from turbobase.cli.client import Client
from turbobase.cli.project import project_find


def _project_or_cwd() -> Path:
    """The project the working directory is in (nearest ``turbobase.config.json``), else itself."""
    return project_find() or Path.cwd().resolve()


def ext_deploy(args: argparse.Namespace, client: Client) -> int:
    if args.to:
        if args.files:
            raise CliError("--to deploys the whole project; name no FILE with it", exit_code=2)
        return bundle_deploy(args)
    if args.remove:
        raise CliError("--remove goes with --to (or use: turbobase ext remove ID)", exit_code=2)
    if not args.files:
        raise CliError("name the FILE(s) to deploy, or --to ENV for the whole project", exit_code=2)
    deployed = []
    for path in args.files:
        entry, files = extension_files(path)
        body = client.post("/v1/extensions", {"entry": entry, "files": files})
        deployed.append(body)
        how = "new" if body.get("outcome") == "written" else "replaced existing"
        if not args.json:
            print(f"deployed {body.get('id')} → status={body.get('status')} ({how})")
    if args.json:
        emit(args, deployed, "")
    return 0


def ext_plan(args: argparse.Namespace, client: Client) -> int:
    if args.to:
        return bundle_plan(args)
    if args.remove:
        raise CliError("--remove goes with --to", exit_code=2)
    body = client.get("/v1/extensions")
    active = [e for e in body.get("extensions", []) if e.get("status") == "active"]
    declared = declared_ids(_project_or_cwd())
    stray = [e for e in active if e["id"] not in declared]
    missing = sorted(set(declared) - {e["id"] for e in active})
    lines = [
        f"undeclared {e['id']} ({e['kind']} v{e['version']}) — remove it with: "
        f"turbobase ext remove {e['id']}"
        for e in stray
    ]
    lines += [f"not deployed {i} ({declared[i]})" for i in missing]
    if not stray:
        lines.insert(0, "nothing is deployed that the project does not declare")
    emit(args, {"undeclared": [e["id"] for e in stray], "notDeployed": missing}, "\n".join(lines))
    return 0


def ext_remove(args: argparse.Namespace, client: Client) -> int:
    body = client.delete(f"/v1/extensions/{quote(args.id, safe=':')}")
    emit(args, body, f"removed {body.get('id')} → status={body.get('status')}")
    return 0


# --- the whole project to one environment (--to) -------------------------------------------


def _bundle_target(args: argparse.Namespace) -> tuple[Any, Client, dict[str, Any]]:
    from turbobase.cli.project import environment_get, project_root

    root = project_root()
    environment = environment_get(root, args.to)
    body = project_bundle(root)
    if args.remove:
        body["removes"] = list(args.remove)
    return environment, environment.client(), body


def plan_lines(plan: dict[str, Any]) -> list[str]:
    """A person's reading of ``/v1/extensions/bundle/plan``."""
    lines = [
        f"{m['change']} {m['id']} ({m['kind']}, {m['entry']})" for m in plan.get("modules", [])
    ]
    for item in plan.get("schedules", []):
        lines.append(
            f"{item['change']} schedule {item['name']} → {item['process']} "
            f"({item['cron']} {item['tz']})"
        )
    for item in plan.get("removes", []):
        alongside = ", ".join(
            a.replace("schedules:", "schedule ") for a in item.get("alongside", [])
        )
        lines.append(
            f"removed {item['id']} ({item['kind']})" + (f" with {alongside}" if alongside else "")
        )
    for item in plan.get("undeclared", []):
        lines.append(
            f"undeclared {item['id']} ({item['kind']} v{item['version']}) — deployed, not in this "
            f"project; remove it with: turbobase ext remove {item['id']}"
        )
    return lines


def bundle_plan(args: argparse.Namespace) -> int:
    environment, client, body = _bundle_target(args)
    plan = client.post("/v1/extensions/bundle/plan", body)
    lines = [f"plan for {environment.name} ({environment.url}):", *plan_lines(plan)]
    emit(args, plan, "\n".join(lines))
    return 0


def bundle_deploy(args: argparse.Namespace) -> int:
    environment, client, body = _bundle_target(args)
    applied = client.post("/v1/extensions/bundle/apply", body)
    how = {"written": "new", "duplicate": "replaced existing", "unchanged": "unchanged"}
    lines = [
        f"deployed {m['id']} → status={m['status']} ({how.get(m['outcome'], m['outcome'])})"
        for m in applied.get("modules", [])
    ]
    lines += [f"schedule {s['name']} → {s['change']}" for s in applied.get("schedules", [])]
    lines += [f"removed {m['id']} → status={m['status']}" for m in applied.get("removed", [])]
    lines += [
        f"undeclared {m['id']} ({m['kind']} v{m['version']}) — left deployed; remove it with: "
        f"turbobase ext remove {m['id']}"
        for m in applied.get("undeclared", [])
    ]
    lines.append(f"applied to {environment.name} ({environment.url})")
    emit(args, applied, "\n".join(lines))
    return 0
