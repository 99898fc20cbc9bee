"""Reading the API's GET /metrics (Prometheus text), with prometheus-client's own parser."""

from prometheus_client.parser import text_string_to_metric_families


def metric_totals(text: str) -> dict[str, float]:
    """Every sample of Prometheus text as {name: value}; the series of one name (its labels) are added up."""
    totals: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    return totals
