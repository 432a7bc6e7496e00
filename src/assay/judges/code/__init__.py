"""Evaluators written as code: scripts in a subprocess, Python scorers."""
