"""What every patch of another package's code shares (the vLLM, SGLang and Infinity integrations,
and the openai and LiteLLM client patch): a replacement names the original it replaces in its
``__tensorb64_replaces__`` attribute, so that patching twice changes nothing and an undo finds the
original; and a function's parameters are read one way, by which a known release is recognised."""

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
