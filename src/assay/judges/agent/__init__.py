"""The agent and RAG judges of Databricks Agent Evaluation and MLflow."""
