"""``docs/operations/prometheus-rules.yml`` loads and carries the alerts the README promises, on
metrics ``/metrics`` really serves (issue 22, item 3)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml
from prometheus_client.metrics import MetricWrapperBase

import kernel.metrics
from turbobase.metrics_collector import DatabaseCollector

RULES = Path(__file__).resolve().parents[2] / "docs" / "operations" / "prometheus-rules.yml"
ALERTS = {
    "TurbobaseWorkerDown",
    "TurbobaseQueueAge",
    "TurbobaseOutboundBacklog",
    "TurbobaseHeldDeletesWaiting",
    "TurbobaseRunFailureRate",
}


def _rules() -> list[dict]:
    loaded = yaml.safe_load(RULES.read_text())
    return [rule for group in loaded["groups"] for rule in group["rules"]]


def test_the_rules_file_is_yaml_with_the_expected_alerts():
    rules = _rules()
    assert {rule["alert"] for rule in rules} == ALERTS
    for rule in rules:
        assert rule["expr"].strip() and rule["labels"]["severity"] in {"warning", "critical"}
        assert rule["annotations"]["summary"]


def _served_names() -> set[str]:
    """Every sample name /metrics can serve: the counters' and histograms' (kernel.metrics) and
    the gauges the scrape reads from the database (turbobase.metrics_collector)."""
    families = [
        family
        for metric in vars(kernel.metrics).values()
        if isinstance(metric, MetricWrapperBase)
        for family in metric.describe()
    ]
    families += list(DatabaseCollector().collect())
    names = set()
    for family in families:
        suffixes = {"counter": ("_total",), "histogram": ("_count", "_sum", "_bucket")}
        names |= {family.name + s for s in suffixes.get(family.type, ("",))}
    return names


@pytest.mark.django_db
def test_every_metric_an_alert_reads_is_served():
    served_samples = _served_names()
    assert "turbobase_runs_finished_total" in served_samples
    for rule in _rules():
        used = set(re.findall(r"\bturbobase_[a-z_]+", rule["expr"]))
        assert used and used <= served_samples, (rule["alert"], used - served_samples)
