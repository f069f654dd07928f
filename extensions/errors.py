"""Domain exceptions of the extensions room."""

from __future__ import annotations

from extensions.codes import ExtensionCode, ExtensionError
from kernel.codes import KernelError
from kernel.errors import Forbidden, InvalidRequest, NotFound


class ExtensionInvalid(InvalidRequest):
    """The extension does not satisfy its contract."""

    error = ExtensionError.INVALID_EXTENSION
    code: str = ExtensionCode.EXTENSION_INVALID


class ExtensionTooLarge(InvalidRequest):
    """A file or the whole deploy is over a compile limit (characters, or compile time)."""

    error = ExtensionError.INVALID_EXTENSION
    code = ExtensionCode.EXTENSION_TOO_LARGE


class ExtensionIdMismatch(InvalidRequest):
    """The first ``id:`` literal in the file is not the id the module defines."""

    error = ExtensionError.EXTENSION_ID_MISMATCH
    code = ExtensionCode.EXTENSION_ID_MISMATCH


class ExtensionImportRefused(InvalidRequest):
    """Only @turbobase/extensions and relative siblings inside the extension's directory import."""

    error = ExtensionError.INVALID_EXTENSION
    code = ExtensionCode.IMPORT_REFUSED


class ConduitNotSupported(InvalidRequest):
    """Conduits are not supported on this instance yet."""

    error = ExtensionError.INVALID_EXTENSION
    code = ExtensionCode.CONDUIT_NOT_SUPPORTED


class ExtensionNotFound(NotFound):
    """No deployed extension has that id."""

    error = ExtensionError.EXTENSION_NOT_FOUND


class ExtensionInUse(InvalidRequest):
    """Something still depends on this extension."""

    error = ExtensionError.EXTENSION_IN_USE
    code: str = ExtensionCode.EXTENSION_IN_USE
    http_status = 409


class DeployForbidden(Forbidden):
    """Deploying extensions needs an administrator, or a token with extensions:deploy owned by one."""

    error = KernelError.ADMIN_REQUIRED
