"""How an agent is run to produce an execution: callables, commands, HTTP, chat models, files."""

from assay.targets.base import RecordedOutput, Target

__all__ = ["RecordedOutput", "Target"]
