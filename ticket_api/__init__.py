"""The ticket API of the lab: FastAPI, PostgreSQL and a (simulated) AI provider."""

from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parent.parent  # the project's folder; `.lab/` in it holds its local data
