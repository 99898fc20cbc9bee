"""scripts.soak: nothing lost under faults and a restart.

- faults: the soak's load with its faults, and a restart or a crash of the API or of PostgreSQL halfway
- audit: the soak's tickets, and its audit of PostgreSQL: every row set against the answers
"""
