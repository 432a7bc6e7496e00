"""What a Python scorer may return, and what each kind of value means for its case and run."""

from __future__ import annotations

from assay.judges.feedback import passes


def test_pass_if_compares_integers_exactly() -> None:
    # as floats both sides are 1e16, so "== 10**16 + 1" would pass 10**16
    assert passes("== 10000000000000001", 10**16 + 1)
    assert not passes("== 10000000000000001", 10**16)
    assert passes("> 10000000000000000", 10**16 + 1)
    assert passes(">= 3", 3) and passes("< 0.5", 0.25) and passes("== yes", "yes")
    assert passes(">= 1", True) and not passes(">= 3", "three")
