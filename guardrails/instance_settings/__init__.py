"""The admin's "Settings" section: instance settings an operator edits (Settings → Write guardrails).

A separate app label only because Django's admin groups its index by app; the rows themselves are
``guardrails.InstanceSetting``, read and written through ``guardrails.settings``.
"""
