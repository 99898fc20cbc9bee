"""A local, OpenAI-compatible AI provider that replays the latencies of recorded calls.

Start it with `python -m simulator`; see simulator/README.md. Importing the package loads
nothing heavy, so `from simulator.embeddings import embed_text` stays cheap.
"""
