"""Rule lookup: ``<recordType>.<action>`` → decision, with the stock defaults."""
from __future__ import annotations

from guardrails.models import Decision, GuardrailRule


def rule_decide(*, record_type: str, action: str, is_connected: bool) -> str:
    """The decision in force. Stock: a delete of a record in a connected system is held."""
    decision = (
        GuardrailRule.objects.filter(record_type=record_type, action=action)
        .values_list("decision", flat=True)
        .first()
    )
    if decision:
        return decision
    if action == "delete" and is_connected:
        return Decision.HOLD
    return Decision.ALLOW


def rule_set(*, record_type: str, action: str, decision: str) -> GuardrailRule:
    if decision not in Decision.values:
        raise ValueError(f"decision must be one of {Decision.values}")
    rule, _ = GuardrailRule.objects.update_or_create(
        record_type=record_type, action=action, defaults={"decision": decision}
    )
    return rule
