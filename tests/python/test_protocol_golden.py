"""docs/protocol.md, the torch worker's side of tests/protocol/: the records it writes are the
golden lines, and it reads the golden plan out of a data file laid out as kcv lays one out (the
header's offset and length). kcv's side of the same files: tests/unit/engine/test_protocol.cpp.
Needs no torch: the worker imports it only in main()."""

import json
import os
import sys
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "adapters", "torch"))
import kcv_torch_worker as worker  # noqa: E402

GOLDEN = os.path.join(ROOT, "tests", "protocol")


def golden_records():
    with open(os.path.join(GOLDEN, "records.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def as_the_torch_worker_writes(g):
    """The record g as the torch worker formats it; None for records only kcv-worker writes."""
    kind = g["kind"]
    if kind in ("ready", "bye", "idle"):
        return kind
    if kind in ("fatal", "build_log"):
        return f"{kind} {worker.hexs(g['text'])}"
    if kind == "start":
        return f"start {g['call']}"
    if kind == "done":
        return worker.done_record(g["call"], g["rc"], g["seconds"], g["text"])
    if kind == "fault" and g["where"] == "device":
        return "fault device " + worker.hexs(g["text"])
    return None  # loading, recheck, tamper, fault in|out|unknown: kcv-worker's


class GoldenRecords(unittest.TestCase):
    def test_the_torch_worker_writes_the_golden_lines(self):
        written = 0
        for g in golden_records():
            if g.get("malformed"):
                continue
            line = as_the_torch_worker_writes(g)
            if line is None:
                continue
            with self.subTest(line=g["line"]):
                self.assertEqual(line, g["line"])
                written += 1
        self.assertGreaterEqual(written, 9)  # not vacuous

    def test_empty_text_is_a_dash(self):
        self.assertEqual(worker.hexs(""), "-")


class GoldenPlan(unittest.TestCase):
    def test_the_torch_worker_reads_the_golden_plan(self):
        with open(os.path.join(GOLDEN, "plan.json"), encoding="utf-8") as f:
            golden = json.load(f)
        text = json.dumps(golden["plan"]).encode()
        at = golden["plan_offset"]
        fd = os.memfd_create("data")
        try:
            os.ftruncate(fd, (at + len(text) + 63) // 64 * 64)
            os.pwrite(fd, at.to_bytes(8, "little") + len(text).to_bytes(8, "little"), 0)
            os.pwrite(fd, text, at)
            mm, plan = worker.map_plan(fd)
            mm.close()
        finally:
            os.close(fd)
        self.assertEqual(plan, golden["plan"])
        # What the worker takes from each call and tensor is there, with the types it expects.
        for c in plan["calls"]:
            self.assertIsInstance(c["reuse"], int)
            self.assertIsInstance(c["concurrent_with_next"], bool)
            for t in c["inputs"] + c["outputs"]:
                for key in ("dtype", "offset", "span", "src", "snap"):
                    self.assertIsInstance(t[key], int)
                self.assertEqual(len(t["shape"]), len(t["stride"]))


if __name__ == "__main__":
    unittest.main()
