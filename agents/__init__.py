"""Typed LLM agents (pydantic-ai) and the offline template engine behind the same outputs."""
