"""Reports: terminal tables, result files (JSONL, JUnit, UiPath output) and HTML."""
