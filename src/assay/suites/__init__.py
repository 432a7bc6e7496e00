"""Suite files in and out: EVAL.yaml, UiPath eval sets, JSONL; all load into :class:`Suite`."""

from assay.suites.model import Suite, SuiteCase

__all__ = ["Suite", "SuiteCase"]
