"""The one way tensorb64 changes another package's code: the vLLM and SGLang plugins, Dynamo's
workers, Infinity, and the openai and LiteLLM client patch all go through it.

A ``Host`` is one package as the patch sees it: its name (as the log lines say it), the logger
its lines go to (a child of the host's own, so they come out where the host's go), the variable
that turns it off, the releases it is tested with and the range it accepts (where the shape of
what is replaced does not say enough), and for each module where something is replaced, the
function that recognises that module's release by the shape of what it replaces and returns the
replacements, or raises ``Unknown`` saying what differs.

``install(host)`` installs each module's replacements when that module is imported (at once where
it is); ``uninstall(host)`` puts back the very objects replaced; ``is_installed(host)`` says
whether any replacement of the host is in place now. Installing is

* all or nothing per module: every replacement is made before any is set, and a shape not
  recognised, or any exception of ours, sets none (the module stays as the host made it);
* idempotent: what is already a replacement (it names its original in ``__tensorb64_replaces__``)
  is not replaced again;
* thread-safe: the registry and the setting are under one lock, taken for the setting alone (the
  recognising, which may import, runs outside it);
* never in the host's way: nothing raised here reaches the host's import (``import_hooks`` guards
  every callback besides);
* logged: one line per host, module and outcome.

Every replacement is made by ``fail_open``: tensorb64's own part runs guarded and answers (or
says how the original is to be called, and what is to be done with its answer: ``Call``), and
where it declines or raises the original answers as called (so the host's own errors stay the host's, raised once, by the host's code),
with one log line per host for a failure of ours. A release is recognised by the shape of what is
replaced: its parameters (``expect_parameters``) and, where they say little, the names its code
uses (``code_names``, ``expect_names``), read through a replacement already in place to the host's
own function, so that a second install recognises the same release and changes nothing.
"""

from __future__ import annotations

import contextlib
import functools
import importlib.metadata
import inspect
import logging
import os
import re
import sys
import threading
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from .import_hooks import after_import

MARKER = "__tensorb64_replaces__"  # on each replacement function: the original it replaces


class Unknown(Exception):
    """A module whose release tensorb64 does not recognise: what differs from the ones it knows."""


@dataclass(frozen=True)
class Replacement:
    """``owner.name`` (a class's or a module's own attribute) to be replaced by ``make(value)``,
    where ``value`` is the attribute as the owner holds it (a function, staticmethod, property)."""

    owner: Any
    name: str
    make: Callable[[Any], Any]


@dataclass(frozen=True, eq=False)
class Host:
    """One package tensorb64 patches (see the module's docstring): what it is, never changed once
    made (whether it is wanted now is the registry's, below)."""

    name: str
    logger: logging.Logger
    what: str  # what its replacements do, for the line logged when installed
    work: str  # what tensorb64 does in a patched call, for the line logged when that fails
    # module name -> recognise(module): the replacements for that module's release, or Unknown
    modules: Mapping[str, Callable[[ModuleType], Sequence[Replacement]]]
    switch: str | None = None  # the environment variable that turns it off ("0", "false", "no", "off")
    package: str | None = None  # the host's top-level package, whose __version__ names its release
    distribution: str | None = None  # else its distribution's name, whose metadata does
    tested: tuple[str, ...] = ()  # the releases the tests run against
    # The releases accepted, where the shape alone does not say enough: (lowest, first not
    # accepted) as version tuples; None: any release whose shape is recognised.
    accepted: tuple[tuple[int, ...], tuple[int, ...]] | None = None
    project: str | None = None  # whose own code answers where tensorb64's does not, if not ``name``

    def __post_init__(self) -> None:
        object.__setattr__(self, "modules", types.MappingProxyType(dict(self.modules)))  # (read-only)

    @property
    def own(self) -> str:
        return self.project or self.name

    def label(self) -> str:
        """The name and release, for a log line."""
        version = self.version()
        return self.name if version == "unknown" else f"{self.name} {version}"

    def version(self) -> str:
        """The release's version (the imported package's, else the installed distribution's), or
        "unknown"."""
        version = getattr(sys.modules.get(self.package or ""), "__version__", None)
        if isinstance(version, str):
            return version
        if self.distribution is not None:
            return _distribution_version(self.distribution)
        return "unknown"

    def check_release(self, version: str | None = None) -> None:
        """Raises Unknown where the host's release is outside the accepted range."""
        if self.accepted is None:
            return
        version = self.version() if version is None else version
        numbers = release_tuple(version)
        low, high = self.accepted
        if numbers is None or not low <= numbers < high:
            raise Unknown(f"release {version} is outside the accepted {_dotted(low)} to before {_dotted(high)}")


@functools.cache
def _distribution_version(distribution: str) -> str:
    """The installed distribution's version, or "unknown"; read once a process (reading a
    distribution's metadata costs about 0.7 ms, which every patch() after an unpatch() would
    otherwise pay; and the code already imported stays that release's, whatever is installed
    later)."""
    try:
        return importlib.metadata.version(distribution)
    except Exception:  # (not installed as a distribution: a stand-in, code on the path)
        return "unknown"


def release_tuple(version: str) -> tuple[int, ...] | None:
    """The leading numbers of a version string ("0.34.1.dev3+g1" -> (0, 34, 1)), or None."""
    match = re.match(r"\d+(\.\d+)*", version or "")
    return tuple(int(part) for part in match.group(0).split(".")) if match else None


def _dotted(numbers: tuple[int, ...]) -> str:
    return ".".join(map(str, numbers))


def enabled(switch: str | None) -> bool:
    """Whether the environment leaves a host on: its variable unset, or not "0"/"false"/"no"/"off"."""
    return switch is None or os.environ.get(switch, "1").strip().lower() not in ("0", "false", "no", "off")


# ---- the registry -----------------------------------------------------------------------------

_lock = threading.Lock()
# (host, owner, name, original value, replacement value), in the order installed
_installed: list[tuple[Host, Any, str, Any, Any]] = []
_wanted: set[Host] = set()  # the hosts installed and not uninstalled since
_waiting: set[tuple[Host, str]] = set()  # (host, module name) with an after-import callback not yet run
_handled: dict[tuple[Host, str], ModuleType] = {}  # (host, module name) -> the module installed into last
_logged: set[tuple] = set()  # (host, module's name and id or "", outcome) already logged


def _log_once(host: Host, module: Any, outcome: str, level: int, message: str, *args: Any,
              exc_info: bool = False) -> None:
    key = (host.name, module and (module.__name__, id(module)), outcome)
    with _lock:
        if key in _logged:
            return
        _logged.add(key)
    host.logger.log(level, message, *args, exc_info=exc_info)


def install(host: Host) -> None:
    """Installs the host's replacements in each of its modules when imported (at once where it
    is; again where a module is imported anew), unless its switch turns it off. Calling it again
    changes nothing."""
    if not enabled(host.switch):
        return
    with _lock:
        _wanted.add(host)
        # (a module installed into already is skipped: patch() on a patched client costs a lookup)
        waiting = [name for name in host.modules if (host, name) not in _waiting
                   and _handled.get((host, name)) is not sys.modules.get(name, _handled)]
        _waiting.update((host, name) for name in waiting)
    for module_name in waiting:  # (outside the lock: a module imported already has its callback at once)
        after_import(module_name, functools.partial(_install_now, host, module_name))


def _install_now(host: Host, module_name: str, module: ModuleType) -> None:
    with _lock:
        _waiting.discard((host, module_name))
        wanted = host in _wanted
    if wanted:
        install_module(host, module_name, module)
        with _lock:
            _handled[(host, module_name)] = module


def install_module(host: Host, module_name: str, module: ModuleType) -> bool:
    """Installs the replacements the host's table gives for ``module`` (its release recognised,
    all of them or none); True where they are (now or already) in place. Never raises; logs one
    line per outcome."""
    try:
        plan = []
        for replacement in host.modules[module_name](module):
            current = replacement.owner.__dict__[replacement.name]
            if not is_replacement(current):
                plan.append((replacement.owner, replacement.name, current, _marked(replacement.make(current), current)))
    except Unknown as why:
        _log_once(host, module, "unknown", logging.WARNING,
                  "tensorb64: %s: %s is not one tensorb64 knows (%s); %s's own is kept",
                  host.label(), module.__name__, why, host.own)
        return False
    except Exception:  # a bug of ours, or a module whose attributes raise: the host's own is kept
        _log_once(host, module, "failed", logging.ERROR,
                  "tensorb64: %s: patching %s failed; %s's own is kept", host.label(), module.__name__, host.own,
                  exc_info=True)
        return False
    installed = False
    with _lock:
        for owner, name, original, new in plan:
            if not is_replacement(owner.__dict__.get(name)):  # (another thread was first)
                setattr(owner, name, new)
                _installed.append((host, owner, name, original, new))
                installed = True
    if installed:
        _log_once(host, module, "installed", logging.INFO, "tensorb64: %s's %s", host.label(), host.what)
    return True


def uninstall(host: Host) -> None:
    """Puts back the very objects the host's replacements replaced (where a replacement is still
    in place), and stops modules imported later from being patched."""
    with _lock:
        _wanted.discard(host)
        for key in [key for key in _handled if key[0] is host]:
            del _handled[key]
        for entry in reversed([entry for entry in _installed if entry[0] is host]):
            _installed.remove(entry)
            _, owner, name, original, new = entry
            if owner.__dict__.get(name) is new:
                setattr(owner, name, original)


def is_installed(host: Host) -> bool:
    """Whether any of the host's replacements is in place now (in a module imported already)."""
    with _lock:
        return any(owner.__dict__.get(name) is new for h, owner, name, _, new in _installed if h is host)


def is_replacement(value: Any) -> bool:
    """Whether an attribute's value (a function, or a staticmethod or property of one) is a
    tensorb64 replacement."""
    return getattr(_function_of(value), MARKER, None) is not None


def _function_of(value: Any) -> Any:
    if isinstance(value, (staticmethod, classmethod)):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    return value


def _own(value: Any) -> Any:
    """The host's own function behind an attribute's value (the original, where it is one of
    tensorb64's replacements already: its shape is the one recognised)."""
    function = _function_of(value)
    while getattr(function, MARKER, None) is not None:
        function = getattr(function, MARKER)
    return function


def _marked(new: Any, original: Any) -> Any:
    function = _function_of(new)
    if getattr(function, MARKER, None) is None:
        setattr(function, MARKER, _function_of(original))
    return new


# ---- recognising a release --------------------------------------------------------------------


def attribute(owner: Any, name: str) -> Any:
    """``owner``'s own attribute ``name`` as it holds it (a class's: its ``__dict__`` entry), or
    Unknown where it has none."""
    namespace = getattr(owner, "__dict__", None)
    if not isinstance(namespace, Mapping) or name not in namespace:
        raise Unknown(f"{getattr(owner, '__name__', owner)!s} has no {name}")
    return namespace[name]


def parameters(function: Any) -> tuple[str, ...] | None:
    """The names of ``function``'s parameters, or None where it has none to read."""
    try:
        return tuple(inspect.signature(function).parameters) if callable(function) else None
    except (TypeError, ValueError):
        return None


def expect_parameters(function: Any, expected: tuple[str, ...], what: str) -> None:
    """Unknown where ``function``'s parameters are not ``expected`` (the release whose behaviour
    the replacement reproduces)."""
    got = parameters(_own(function))
    if got != expected:
        raise Unknown(f"{what} takes {got}, not {expected}")


def code_names(function: Any) -> frozenset[str] | None:
    """The global and attribute names ``function``'s code uses, its nested code's (comprehensions,
    generator expressions, lambdas) included, so that the set is the same whether or not the
    compiler inlines a comprehension (3.12 does, 3.11 does not); None for what has no code. A
    replacement already in place is read through to the host's own function."""
    code = getattr(_own(function), "__code__", None)
    if code is None:
        return None
    names, pending = set(), [code]
    while pending:
        code = pending.pop()
        names.update(code.co_names)
        pending.extend(const for const in code.co_consts if isinstance(const, types.CodeType))
    return frozenset(names)


def expect_names(function: Any, expected: Iterable[str], what: str, *others: Iterable[str]) -> int:
    """Which of the known releases' names ``function``'s code uses, exactly (``code_names``):
    0 for ``expected``, 1 for the first of ``others``, ...; Unknown where none: for a function
    whose parameters say little, what it does is its shape."""
    got = code_names(function)
    for number, names in enumerate((expected, *others)):
        if got == frozenset(names):
            return number
    known = "the known release's" if not others else "any known release's"
    raise Unknown(f"{what}'s code is not {known} (names {sorted(got or ())})")


# ---- answering --------------------------------------------------------------------------------


def failed(host: Host) -> None:
    """Logs, once per host, the exception being handled: a failure of tensorb64's own inside a
    patched call, which the host's own code then answers."""
    _log_once(host, None, "call failed", logging.ERROR, "tensorb64: %s failed; %s's own answered (logged once)",
              host.work, host.own, exc_info=True)


@dataclass(frozen=True)
class Call:
    """What tensorb64's part of a replacement may answer instead of an answer of its own: the
    original is to answer, called with ``args`` and ``kwargs`` (in place of the call's own),
    inside ``context`` where one is given (entered just before the original runs, left when it
    returns or raises); and where ``then`` is given, the replacement answers ``then(answer)`` of
    the original's answer instead (tensorb64's part after the host's, guarded as the first:
    where it declines, None, or raises, the original's answer stands, and a failure is logged
    once per host)."""

    args: tuple
    kwargs: dict = field(default_factory=dict)
    context: AbstractContextManager | None = None
    then: Callable[[Any], Any] | None = None


def fail_open(host: Host, original: Callable, ours: Callable) -> Callable:
    """The replacement for ``original``, with the same signature (and a coroutine function where
    ``original`` is one): ``ours(*args, **kwargs)`` runs first, guarded, and answers, or returns
    a ``Call`` (the original answers, called as it says), or declines (None: the original answers
    as called). Where ours raises, it has declined, and its failure is logged once per host. The
    original runs outside any handler of ours, once: what the host returns or raises is its own,
    context included."""

    def prepared(args: tuple, kwargs: dict) -> Any:
        try:
            answer = ours(*args, **kwargs)
        except Exception:
            failed(host)
            return Call(args, kwargs)
        return Call(args, kwargs) if answer is None else answer

    def finished(call: Call, answer: Any) -> Any:
        if call.then is None:
            return answer
        try:
            ours_after = call.then(answer)
        except Exception:
            failed(host)
            return answer
        return answer if ours_after is None else ours_after

    if inspect.iscoroutinefunction(original):
        @functools.wraps(original)
        async def replacement(*args: Any, **kwargs: Any) -> Any:
            answer = prepared(args, kwargs)
            if not isinstance(answer, Call):
                return answer
            with answer.context or contextlib.nullcontext():
                result = await original(*answer.args, **answer.kwargs)
            return finished(answer, result)
    else:
        @functools.wraps(original)
        def replacement(*args: Any, **kwargs: Any) -> Any:
            answer = prepared(args, kwargs)
            if not isinstance(answer, Call):
                return answer
            with answer.context or contextlib.nullcontext():
                result = original(*answer.args, **answer.kwargs)
            return finished(answer, result)

    setattr(replacement, MARKER, original)
    return replacement
