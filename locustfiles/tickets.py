"""Locust users that create tickets back to back, like support customers that never stop writing.

The course's steady load, 8 users for 40 seconds, from the project folder (the API on port 8000):

    locust -f locustfiles/tickets.py --headless -u 8 -r 8 -t 40s --host http://127.0.0.1:8000

Without --headless, Locust serves its web UI on http://127.0.0.1:8089 (this machine only:
`[tool.locust]` in pyproject.toml; from another folder, add --web-host 127.0.0.1). Only 201 counts as a
success; every other answer is a failure named by the API's error code, such as `ai_busy (503)`.
TICKETS_READ_WEIGHT=N adds a light task that reads a customer's tickets, N per 10 new tickets
(off by default).
"""

import os
import random

from locust import FastHttpUser, constant, task

from scripts.toolkit.answers import error_code
from scripts.toolkit.dataset import KNOWN_CUSTOMER_IDS, random_ticket

CREATE_NAME = "/v1/tickets"
READ_WEIGHT = int(os.environ.get("TICKETS_READ_WEIGHT", "0"))


class TicketUser(FastHttpUser):
    """One customer: sends a ticket, waits for the answer, sends the next one at once (a closed loop)."""

    # FastHttpUser (geventhttpclient) needs a fraction of HttpUser's CPU per request, so Locust is
    # not the limit. A ticket that waits longer than its network_timeout (60 s) fails as "no answer".
    wait_time = constant(0)

    def on_start(self) -> None:
        """Give each user its own random stream of customers and texts."""
        self.rng = random.Random()

    @task(10)
    def create_ticket(self) -> None:
        """POST /v1/tickets; a success is 201 only."""
        with self.client.post(CREATE_NAME, json=random_ticket(self.rng), catch_response=True) as response:
            if response.status_code == 201:
                response.success()
            else:
                response.failure(failure_name(response))

    @task(READ_WEIGHT)
    def read_tickets(self) -> None:
        """GET one page of a random customer's tickets (weight 0, so off, unless TICKETS_READ_WEIGHT is set)."""
        customer_id = self.rng.choice(KNOWN_CUSTOMER_IDS)
        with self.client.get(
            f"/v1/tickets?customer_id={customer_id}&limit=10", name="/v1/tickets?customer_id=[id]", catch_response=True
        ) as response:
            if response.status_code != 200:
                response.failure(failure_name(response))


def failure_name(response) -> str:
    """`ai_busy (503)` from the API's error body; the status alone, or the network error, otherwise."""
    if not response.status_code:
        return f"no answer ({type(response.error).__name__})"
    return f"{error_code(response)} ({response.status_code})"
