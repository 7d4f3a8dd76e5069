"""The end of a script test (scripts.add_summaries, scripts.make_corpus_subset): each failure on a
line of its own, one summary line, and the exit status ctest reads; and checker(), the failures list
with the check that fills it."""


def checker():
    """A list of failures and check(cond, what), which adds `what` to it when cond is false."""
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)
    return failures, check


def finish(name, failures):
    for f in failures:
        print("FAIL:", f)
    print(f"{name}: {'ok' if not failures else f'{len(failures)} failure(s)'}")
    return 1 if failures else 0
