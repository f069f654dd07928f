"""Reading ``GET /metrics`` in tests: the exposition parsed into ``{(name, labels): value}``."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from rest_framework.test import APIClient

from kernel.models import token_issue

Samples = dict[tuple[str, frozenset], float]


def samples_of(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    """The sample's value, 0 when the series is not there (yet)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def metrics_client(user) -> APIClient:
    """A client with a token carrying only ``metrics:read``, as a scraper would hold."""
    _, raw = token_issue(user=user, scopes=["metrics:read"], name="scraper")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {raw}")
    return client


def scrape(client: APIClient) -> Samples:
    res = client.get("/metrics")
    assert res.status_code == 200, res.content
    assert res["Content-Type"].startswith("text/plain"), res["Content-Type"]
    return samples_of(res.content.decode())
