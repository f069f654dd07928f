"""The PostgREST-syntax read: ``execute.rest_read`` backs ``GET /v1/rest/...`` and ``ctx.query``."""
