"""Domain exceptions of the extensions room."""

from __future__ import annotations

from extensions.codes import ExtensionCode
from kernel.errors import Forbidden, InvalidRequest, NotFound


class ExtensionInvalid(InvalidRequest):
    """The extension does not satisfy its contract."""

    error = "invalid_extension"
    code: str = ExtensionCode.EXTENSION_INVALID


class ExtensionTooLarge(InvalidRequest):
    """A file or the whole deploy is over a compile limit (characters, or compile time)."""

    error = "invalid_extension"
    code = ExtensionCode.EXTENSION_TOO_LARGE


class ExtensionIdMismatch(InvalidRequest):
    """The first ``id:`` literal in the file is not the id the module defines."""

    error = "extension_id_mismatch"
    code = ExtensionCode.EXTENSION_ID_MISMATCH


class ExtensionImportRefused(InvalidRequest):
    """Only @turbobase/extensions and relative siblings inside the extension's directory import."""

    error = "invalid_extension"
    code = ExtensionCode.IMPORT_REFUSED


class ConduitNotSupported(InvalidRequest):
    """Conduits are not supported on this instance yet."""

    error = "invalid_extension"
    code = ExtensionCode.CONDUIT_NOT_SUPPORTED


class ExtensionNotFound(NotFound):
    """No deployed extension has that id."""

    error = "extension_not_found"


class ExtensionInUse(InvalidRequest):
    """Something still depends on this extension."""

    error = "extension_in_use"
    code: str = ExtensionCode.EXTENSION_IN_USE
    http_status = 409


class DeployForbidden(Forbidden):
    """Deploying extensions needs an administrator, or a token with extensions:deploy owned by one."""

    error = "admin_required"
