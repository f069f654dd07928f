"""The kernel: what every room needs and nothing above it may be needed for.

The one error family and its HTTP mapping (``errors``), personal access tokens and their scopes
(``models``, ``scopes``, ``auth``) and id parsing (``ids``). It imports no room and no project
shell; every room may import it.
"""
