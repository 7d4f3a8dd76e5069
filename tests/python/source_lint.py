"""The source walk of the lint tests (lint.backend_names, lint.library_environment): lines of
kcv's library (src/kcv) that a pattern finds, outside the files a rule allows, comments stripped."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src", "kcv")
SOURCES = (".cpp", ".hpp", ".cu", ".cuh", ".h", ".in")


def offenders(pattern, allowed=lambda path: False, root=SRC):
    """"path:line: text" of every line under root that pattern finds, in a file not allowed."""
    found = []
    for dirpath, _, files in os.walk(root):
        for f in sorted(files):
            path = os.path.join(dirpath, f)
            if not f.endswith(SOURCES) or allowed(path):
                continue
            with open(path, encoding="utf-8", errors="replace") as text:
                for n, line in enumerate(text, 1):
                    if pattern.search(line.split("//")[0]):
                        found.append(f"{os.path.relpath(path, ROOT)}:{n}: {line.strip()}")
    return found
