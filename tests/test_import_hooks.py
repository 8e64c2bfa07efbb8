"""tensorb64.import_hooks.after_import: code run right after a module is imported (torch's
registration, the vLLM and Dynamo patches), once."""

from __future__ import annotations

import importlib
import importlib.machinery
import json
import sys
import threading
import uuid

import pytest

from tensorb64._hosts import import_hooks
from tensorb64._hosts.import_hooks import after_import


@pytest.fixture
def module_dir(tmp_path, monkeypatch):
    """A directory on sys.path for modules of fresh names (forgotten afterwards)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    names = []

    def make(source: str) -> str:
        name = f"after_import_probe_{uuid.uuid4().hex}"
        (tmp_path / f"{name}.py").write_text(source)
        names.append(name)
        importlib.invalidate_caches()
        return name

    yield make
    for name in names:
        sys.modules.pop(name, None)
        import_hooks._pending.pop(name, None)


def test_an_imported_module_gets_the_callback_at_once():
    seen = []
    after_import("json", seen.append)
    assert seen == [json]


def test_a_later_import_runs_the_callbacks_once_in_order(module_dir):
    name = module_dir("value = 42\n")
    seen = []
    after_import(name, lambda m: seen.append(("first", m.value)))
    after_import(name, lambda m: seen.append(("second", m.value)))
    assert seen == [] and name not in sys.modules
    module = importlib.import_module(name)
    assert seen == [("first", 42), ("second", 42)]
    importlib.import_module(name)
    assert len(seen) == 2
    # the module keeps its own loader, and nothing is left waiting for it
    assert type(module.__loader__) is importlib.machinery.SourceFileLoader
    assert type(module.__spec__.loader) is importlib.machinery.SourceFileLoader
    assert name not in import_hooks._pending


def test_a_failed_import_runs_nothing_until_one_succeeds(module_dir, tmp_path):
    flag = tmp_path / "fail"
    flag.write_text("")
    name = module_dir(f"import os\nif os.path.exists({str(flag)!r}):\n    raise RuntimeError('not today')\nvalue = 1\n")
    seen = []
    after_import(name, seen.append)
    with pytest.raises(RuntimeError, match="not today"):
        importlib.import_module(name)
    assert seen == [] and name not in sys.modules
    flag.unlink()
    module = importlib.import_module(name)
    assert seen == [module] and module.value == 1


def test_a_callback_registered_while_its_module_runs_waits_for_the_whole_module(module_dir):
    """Registered from the module's own code (mid-import): run after the rest of it."""
    name = module_dir(
        "import sys\n"
        "from tensorb64._hosts.import_hooks import after_import\n"
        "seen = []\n"
        "after_import(__name__, lambda m: seen.append(m.last))\n"
        "last = 'defined after the registration'\n"
    )
    after_import(name, lambda m: None)  # the finder in place before the import starts
    module = importlib.import_module(name)
    assert module.seen == ["defined after the registration"]


def test_registrations_from_many_threads_during_an_import_each_run_once(module_dir):
    """Threads register callbacks while another imports the module (slowly): every callback runs
    exactly once, with the whole module, whether registered before, during or after the import."""
    name = module_dir("import time\ntime.sleep(0.05)\ncomplete = True\n")
    runs = []
    lock = threading.Lock()

    def callback_for(key):
        def callback(module):
            with lock:
                runs.append((key, module.complete))

        return callback

    after_import(name, callback_for("before"))
    count, each = 8, 50
    barrier = threading.Barrier(count + 1)
    errors = []

    def register(i):
        try:
            barrier.wait()
            for k in range(each):
                after_import(name, callback_for((i, k)))
        except BaseException as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    def import_it():
        barrier.wait()
        importlib.import_module(name)

    threads = [threading.Thread(target=register, args=(i,)) for i in range(count)]
    threads.append(threading.Thread(target=import_it))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    after_import(name, callback_for("after"))
    assert errors == []
    keys = [key for key, _ in runs]
    assert len(keys) == len(set(keys)) == count * each + 2
    assert all(complete for _, complete in runs)


def test_a_failing_callback_never_fails_the_import_and_the_others_still_run(module_dir, caplog):
    """A callback raising inside the importer's import (a bug of ours, a host attribute that
    raises): the import succeeds with the module as its own code made it, one log line, and the
    callbacks after it still run; the same where the module is imported already."""
    name = module_dir("value = 7\n")
    seen = []

    def failing(module):
        raise RuntimeError("a bug in a callback")

    after_import(name, failing)
    after_import(name, lambda m: seen.append(m.value))
    module = importlib.import_module(name)
    assert module.value == 7 and seen == [7]
    after_import(name, failing)  # imported already: run at once, guarded the same
    lines = [r.getMessage() for r in caplog.records if r.name == "tensorb64"]
    assert lines == [f"tensorb64: a callback after importing {name} failed; the module is left as it is"] * 2
    assert all(r.exc_info is not None for r in caplog.records if r.name == "tensorb64")
