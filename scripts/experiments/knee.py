"""Where a route stops scaling (scripts.sweep): req/s and latency per level of requests in flight, and the knee."""

import httpx

from scripts.stall import check_api
from scripts.toolkit.cli import progress
from scripts.toolkit.load.closed_loop import closed_loop, getter, session, warm_up
from scripts.toolkit.measure.quantiles import quantile
from scripts.toolkit.reports.text import fmt_ms

# Clients added past the knee bring less than this share of the req/s they would bring with room to spare.
KNEE_SHARE_OF_IDEAL = 0.25
P99_CLIMB = 1.2  # ... while p99 grows by more than 20%


async def sweep(url: str, path: str, levels: list[int], duration_s: float) -> list[dict]:
    """Measure every level in turn, on the same warmed-up connections; returns one row per level."""
    rows = []
    async with httpx.AsyncClient(base_url=url, timeout=10) as check_client, session(url, max(levels)) as opened:
        await check_api(check_client)
        await warm_up(opened, path)
        for concurrency in levels:
            progress(f"  {concurrency} in flight for {duration_s:g} s ...")
            load = await closed_loop([getter(opened, path)] * concurrency, duration_s=duration_s)
            measured = bool(load.latencies_ms) and not load.saturated  # a saturated generator measured itself
            rows.append(
                {
                    "concurrency": concurrency,
                    "ok": len(load.latencies_ms),
                    "errors": len(load.errors),
                    "generator_cpu_share": load.cpu_share,
                    "saturated": load.saturated,
                    "rps": load.rps if measured else None,
                    **{f"p{p}": quantile(load.latencies_ms, p / 100) if measured else None for p in (50, 95, 99)},
                }
            )
    return rows


def find_knee(rows: list[dict]) -> dict | None:
    """The last level before req/s stops rising meaningfully while p99 climbs; None if that never happens.

    "Meaningfully" is relative to the clients added: going from 8 to 24 in flight could triple the
    req/s of a server with room to spare, so a rise of less than a quarter of that is a stop.
    """
    measured = [row for row in rows if row["rps"]]
    for before, after in zip(measured, measured[1:], strict=False):
        ideal_gain = after["concurrency"] / before["concurrency"] - 1
        gain = after["rps"] / before["rps"] - 1
        if gain < KNEE_SHARE_OF_IDEAL * ideal_gain and after["p99"] > before["p99"] * P99_CLIMB:
            return before
    return None


def render(path: str, duration_s: float, rows: list[dict], knee: dict | None) -> str:
    """The table, then one line about the knee."""
    header = (
        f"{'in flight':>10} {'req/s':>9} {'p50 ms':>9} {'p95 ms':>9} {'p99 ms':>9} {'errors':>7} {'generator CPU':>14}"
    )
    lines = [f"GET {path}, {duration_s:g} s per level", header]
    for row in rows:
        rps = "-" if row["rps"] is None else f"{row['rps']:.1f}"
        cpu = f"{row['generator_cpu_share']:.0%}" + (" saturated" if row["saturated"] else "")
        lines.append(
            f"{row['concurrency']:>10} {rps:>9} {fmt_ms(row['p50']):>9} {fmt_ms(row['p95']):>9} "
            f"{fmt_ms(row['p99']):>9} {row['errors']:>7} {cpu:>14}"
        )
    if knee is None:
        top = max((row["concurrency"] for row in rows if row["rps"]), default=0)
        lines.append(f"no knee up to {top} in flight: req/s rose at every measured level; try higher levels")
    else:
        lines.append(
            f"knee: {knee['concurrency']} in flight, {knee['rps']:.1f} req/s, p99 {fmt_ms(knee['p99'])} ms"
            f" (serve at about {0.6 * knee['rps']:.0f}-{0.7 * knee['rps']:.0f} req/s, 60-70% of it)"
        )
    return "\n".join(lines)
