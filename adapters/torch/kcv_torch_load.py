"""Loading a KernelBench problem or solution file as a module, and where its own modules are found.
No torch here: kcv's tests check, where torch is not installed, that a solution kcv copied into its
workdir still imports the modules beside it (tests/unit/corpus/test_private_copy.cpp)."""

import importlib.util
import os
import sys


def extend_search_path(dirs):
    """Appends each directory to sys.path once, in order, after the interpreter's own entries (the
    standard library and site-packages keep precedence): kcv's plan names the private copies'
    directories first, then the originals' (Candidate::python_search_path)."""
    for d in dirs:
        if d and d not in sys.path:
            sys.path.append(d)


def load_module(path, name):
    """The file at path, run as module `name`. Its own directory joins sys.path (at the end), as a
    script's would: `import helper` finds helper.py beside it."""
    extend_search_path([os.path.dirname(os.path.abspath(path))])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise RuntimeError(f"cannot load '{path}' as a Python module")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod
