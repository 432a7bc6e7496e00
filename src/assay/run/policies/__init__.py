"""Scoring policies: how a case's scores become its verdict, a run's aggregates and gates, and how two runs of it compare."""
