"""Held deletes decided: the API and the admin screen (shown under Compliance → Guardrails).

They live in records, not guardrails, because a decision acts through the records door
(``records.verdicts.held_delete_decide``) and guardrails sits below records.
"""
