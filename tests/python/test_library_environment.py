"""Issue 23: the library takes options, not environment variables. No C++ of the library (src/kcv)
reads a KCV_* variable: its settings are fields of kcv::Settings (include/kcv/settings.hpp), and
the front ends map the environment onto them (tools/kcv/environment.cpp, used by the CLI and the
Python module). What the library still reads (PATH, TMPDIR, PYTHONPATH, CUDA_HOME,
CUDA_VISIBLE_DEVICES, LD_LIBRARY_PATH) is environment passed through to its children, each read
with a NOTES comment saying so."""
import os
import re
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from source_lint import offenders  # noqa: E402

# A read of a KCV_* variable: getenv, secure_getenv or a helper named *_env, given the name as a literal.
READ = re.compile(r'\b(secure_)?getenv\s*\(\s*"KCV_|\w*_env\s*\(\s*"KCV_')


class LibraryEnvironment(unittest.TestCase):
    def test_the_library_reads_no_kcv_variable(self):
        self.assertEqual(offenders(READ), [], "make it a field of kcv::Settings; the front ends map the environment")

    def test_the_check_sees_a_read(self):
        # The pattern must catch what it forbids, and not the writes kcv makes for its children.
        for line in ['if (const char* e = std::getenv("KCV_WORKER"); e && *e)', 'getenv( "KCV_POOL")',
                     'secure_getenv("KCV_X")', 'positive_integer_env("KCV_THREADS", 1, 4096)']:
            self.assertTrue(READ.search(line), line)
        for line in ['set_env(env, "KCV_THREADS", "2");', 'std::getenv("PATH")', '"(set KCV_WORKER)"']:
            self.assertFalse(READ.search(line), line)


if __name__ == "__main__":
    sys.exit(0 if unittest.main(exit=False).result.wasSuccessful() else 1)
