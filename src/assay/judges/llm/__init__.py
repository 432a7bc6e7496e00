"""LLM judges: prompts through the engine, answers validated."""
