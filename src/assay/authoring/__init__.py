"""Writing suites: a starter project, format conversion, drafted rubrics."""
