"""Making load on a ticket API, and one level of it measured against the physical limit.

- closed_loop: the one closed load loop of the tools, on aiohttp's client
- levels: one level of load against the physical limit (scripts.bench, scripts.client_cpu)
- turns: two apps measured in turn at one level, each one's windows pooled; the reference's options in turn;
  one API process against two (scripts.kitchens)
- locust and request_times: Locust runs, and its plugin that records each request (loaded by Locust only)
- wrk: wrk, the outside check of the bench's own generator, and a native generator of GETs
"""
