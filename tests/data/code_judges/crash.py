"""A code judge that fails: noise on stderr, then a traceback and exit status 1."""

import sys

sys.stdin.read()
sys.stderr.write("x" * 5000 + "\n")
raise RuntimeError("judge exploded at the end")
