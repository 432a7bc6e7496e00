"""What stored runs say: comparison, config diffs, significance, statistics."""
