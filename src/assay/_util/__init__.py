"""Private utilities every layer may use: threads, processes, SQLite WAL, text, YAML."""
