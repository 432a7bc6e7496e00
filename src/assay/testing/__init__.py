"""Deterministic stand-ins for real model servers: used by assay's tests, benchmarks and demos.

``answers`` builds an OpenAI-shaped answer for any request (it satisfies the request's JSON
schema or tool). ``mock_server`` serves those answers over real HTTP with latency and faults.
The ``fake:`` provider serves them in-process.
"""
