"""The run store: runs, executions, scores, case records, baselines and leases, in SQLite or
PostgreSQL; written as results complete, read a page at a time."""
