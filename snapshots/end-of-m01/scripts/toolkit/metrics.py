"""Reading the API's GET /metrics (Prometheus text), with prometheus-client's own parser."""

from dataclasses import dataclass

from prometheus_client.parser import text_string_to_metric_families


@dataclass
class Metrics:
    """One reading of /metrics: every sample by name and labels, and the labels of `ticket_api_info`."""

    values: dict[tuple[str, tuple], float]
    info: dict[str, str]

    def get(self, name: str, **labels: str) -> float | None:
        """One sample's value, or None if the API does not expose it."""
        return self.values.get((name, tuple(sorted(labels.items()))))

    def totals(self) -> dict[str, float]:
        """Every sample as {name: value}; the series of one name (its labels) are added up."""
        totals: dict[str, float] = {}
        for (name, _), value in self.values.items():
            totals[name] = totals.get(name, 0.0) + value
        return totals


def read_metrics(text: str) -> Metrics:
    """Parse /metrics' Prometheus text."""
    values, info = {}, {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
            if sample.name == "ticket_api_info":
                info = dict(sample.labels)
    return Metrics(values, info)
