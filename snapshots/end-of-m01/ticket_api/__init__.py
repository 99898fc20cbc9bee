"""The ticket API of the lab: FastAPI, PostgreSQL and a (simulated) AI provider."""
