"""Evaluators made of evaluators: composites and juries."""
