"""Integrations that plug a cortex store into agent frameworks.

* `cortex.integrations.mcp`: a Model Context Protocol server (extra `mcp`).
* `cortex.integrations.langgraph`: `CortexStore`, a LangGraph `BaseStore` (extra `langgraph`).

Each module imports its framework, so import the one you use; this package itself
imports nothing optional.
"""
