"""Rule lookup: ``<recordType>.<action>`` → decision, with the stock defaults."""

from __future__ import annotations

from guardrails.cache import TableCache
from guardrails.models import Decision, GuardrailRule, RuleAction

_rules = TableCache(
    lambda: {
        (record_type, action): decision
        for record_type, action, decision in GuardrailRule.objects.values_list(
            "record_type", "action", "decision"
        )
    }
)


def rules_cache_clear(*args: object, **kwargs: object) -> None:
    _rules.clear_now_and_after_commit()


def rule_decide(*, record_type: str, action: str, is_connected: bool) -> str:
    """The decision in force. Stock: a delete of a record in a connected system is held."""
    decision = _rules.get().get((record_type, action))
    if decision:
        return decision
    if action == RuleAction.DELETE and is_connected:
        return Decision.HOLD
    return Decision.ALLOW


def rule_set(*, record_type: str, action: str, decision: str) -> GuardrailRule:
    if decision not in Decision.values:
        raise ValueError(f"decision must be one of {Decision.values}")
    rule, _ = GuardrailRule.objects.update_or_create(
        record_type=record_type, action=action, defaults={"decision": decision}
    )
    return rule
