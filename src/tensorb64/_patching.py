"""What every patch of another package's code shares (the vLLM, SGLang and Infinity integrations):
how a replacement is marked and recognised, so that patching twice changes nothing and an undo finds
the original, and how a function's parameters are read, by which a known release is recognised."""

from __future__ import annotations

import inspect


def replaced(function) -> bool:
    """Whether ``function`` is one of tensorb64's replacements (it names the original it replaces)."""
    return getattr(function, "__tensorb64_replaces__", None) is not None


def parameters(function):
    """The names of ``function``'s parameters, or None where it has none to read (not a function)."""
    try:
        return tuple(inspect.signature(function).parameters) if function is not None else None
    except (TypeError, ValueError):
        return None
