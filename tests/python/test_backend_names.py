"""Issue 23: the backend is a type. Outside its own folder (src/kcv/backends/<name>/, the host
registry) and kcv-worker's registry (src/kcv/worker/worker_backends.cpp), no C++ of kcv compares a
backend's name: the gates, the engine, the runner and the isolation core ask the Backend
(host_backend.hpp) or the WorkerBackend (backend.hpp). Adding a backend is then a folder plus one
line in each registry (docs/backends.md)."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from source_lint import SRC, offenders  # noqa: E402

# The backends' own folder, and kcv-worker's registry of their worker halves.
ALLOWED = (os.path.join(SRC, "backends") + os.sep, os.path.join(SRC, "worker", "worker_backends.cpp"))
# A comparison with a backend's name, either way round, or a switch over it.
COMPARISON = re.compile(r'(==|!=)\s*"(cpu|cuda)"|"(cpu|cuda)"\s*(==|!=)|name\(\)\s*==\s*"')


class BackendNames(unittest.TestCase):
    def test_no_backend_name_is_compared_outside_the_backends(self):
        self.assertEqual(offenders(COMPARISON, lambda p: p.startswith(ALLOWED[0]) or p == ALLOWED[1]), [], "ask the Backend instead (docs/backends.md)")

    def test_the_check_sees_a_comparison(self):
        # The pattern must catch what it forbids: both orders and a name() test.
        for line in ['if (ctx.backend == "cuda") {', 'if ("cpu" != backend)', 'b.name() == "hip"']:
            self.assertTrue(COMPARISON.search(line), line)
        self.assertFalse(COMPARISON.search('ro.backend = "cuda";'))


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
