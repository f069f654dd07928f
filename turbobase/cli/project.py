"""The project a ``turbobase ext deploy --to <env>`` ships: its config file and its bundle.

A project is a folder holding ``turbobase.config.json``::

    {
      "environments": {
        "staging": {"url": "https://staging.example.com", "tokenEnv": "TURBOBASE_TOKEN_STAGING"},
        "prod":    {"url": "https://tb.example.com"}
      }
    }

``url`` is the instance; ``urlEnv`` (optional) names an environment variable whose value,
when it is set and not empty, is the instance's URL instead of ``url`` — so one committed config
serves a local instance on any port (``"urlEnv": "TURBOBASE_URL"``). ``tokenEnv`` names the
environment variable holding that instance's personal access token (default
``TURBOBASE_TOKEN_<ENV>``, upper-cased, ``-`` as ``_``) — the file names where a token is, never
a token, so it can be committed. The folder's ``processes/`` and ``hooks/`` hold the extensions
(every file with a ``defineProcess``/``defineHook`` default export is one module; the others are
siblings it may import) and ``turbobase/schedules.json`` the schedules; ``extensions.project``
reads them into the bundle. The config is found from the working directory upwards, as git finds
``.git``.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from extensions.project import CONFIG_NAME
from turbobase.cli.base import CliError
from turbobase.cli.client import Client


@dataclass(frozen=True)
class Environment:
    """One named instance from the config file, with the token read from its variable."""

    name: str
    url: str
    token_env: str

    def client(self, environ: Mapping[str, str] | None = None) -> Client:
        environ = os.environ if environ is None else environ
        token = environ.get(self.token_env)
        if not token:
            raise CliError(
                f"{self.token_env} is not set: export the {self.name} instance's token in it "
                "(python manage.py tb_token <admin> --scope extensions:deploy)",
                exit_code=2,
            )
        return Client(url=self.url, token=token)


def project_find(start: Path | None = None) -> Path | None:
    """The nearest folder, from ``start`` (the working directory) upwards, holding the config."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file():
            return folder
    return None


def project_root(start: Path | None = None) -> Path:
    """The project's folder; refused (exit 2) outside any project."""
    found = project_find(start)
    if found is not None:
        return found
    here = (start or Path.cwd()).resolve()
    raise CliError(
        f"no {CONFIG_NAME} in {here} or above it; create one naming your environments, "
        'e.g. {"environments": {"prod": {"url": "https://…"}}}',
        exit_code=2,
    )


def _config_read(root: Path) -> dict[str, Any]:
    path = root / CONFIG_NAME
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CliError(f"{path}: not readable JSON ({exc})", exit_code=2) from exc
    if not isinstance(config, dict) or not isinstance(config.get("environments"), dict):
        raise CliError(f'{path}: needs an "environments" object', exit_code=2)
    return config


def environment_get(root: Path, name: str, environ: Mapping[str, str] | None = None) -> Environment:
    """The environment ``name`` of the project at ``root`` (``urlEnv`` read from ``environ``)."""
    environments = _config_read(root)["environments"]
    entry = environments.get(name)
    if not isinstance(entry, dict):
        known = ", ".join(sorted(environments)) or "none"
        raise CliError(
            f"{CONFIG_NAME} names no environment {name!r} (it has: {known})", exit_code=2
        )
    url, field = _url_pick(name, entry, os.environ if environ is None else environ)
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise CliError(f"{CONFIG_NAME}: {field} must be an http(s) URL", exit_code=2)
    default_env = "TURBOBASE_TOKEN_" + re.sub(r"[^A-Za-z0-9]", "_", name).upper()
    token_env = entry.get("tokenEnv", default_env)
    if not isinstance(token_env, str) or not token_env:
        raise CliError(
            f"{CONFIG_NAME}: environments.{name}.tokenEnv must name a variable", exit_code=2
        )
    return Environment(name=name, url=url.rstrip("/"), token_env=token_env)


def _url_pick(name: str, entry: dict[str, Any], environ: Mapping[str, str]) -> tuple[Any, str]:
    """The URL in force and where it came from (named in a refusal): ``urlEnv``'s variable when
    it is set, else ``url``."""
    url_env = entry.get("urlEnv")
    if url_env is not None:
        if not isinstance(url_env, str) or not url_env:
            raise CliError(
                f"{CONFIG_NAME}: environments.{name}.urlEnv must name a variable", exit_code=2
            )
        if environ.get(url_env):
            return environ[url_env], f"{url_env} (environments.{name}.urlEnv)"
    if "url" not in entry and url_env is not None:
        raise CliError(
            f"{url_env} is not set and environments.{name} has no url: export the instance's "
            f"URL in {url_env}",
            exit_code=2,
        )
    return entry.get("url"), f"environments.{name}.url"
