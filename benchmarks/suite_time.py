"""Where the test suite's time goes: per file and per test, from a pytest JUnit XML report.

CI runs the README's test command in a 15-minute budget (install included), so the suite's
time is tracked like any other benchmark. Run the suite with a report, then read it::

    python -m pytest -q -n auto --maxprocesses 4 --dist worksteal \\
        --junitxml=suite.xml -o junit_duration_report=total
    python benchmarks/suite_time.py suite.xml [previous.xml] [--top 30]

``junit_duration_report=total`` counts each test's setup, call and teardown (a module fixture's
cost lands on the first test that uses it in its worker process). The table gives the
test-seconds per file (their sum over the workers is about twice the wall time on two cores)
and the slowest tests; with a previous report, the change per file.
"""

from __future__ import annotations

import argparse
import collections
import xml.etree.ElementTree as ET


def durations(path: str) -> dict[str, float]:
    """``{test id: seconds}`` of a JUnit XML report (``classname::name``)."""
    out = {}
    for tc in ET.parse(path).getroot().iter("testcase"):
        out[f"{tc.get('classname')}::{tc.get('name')}"] = float(tc.get("time") or 0.0)
    return out


def file_of(test_id: str) -> str:
    """The test file of a test id (``tests.models.detm.test_detm.TestX::test_y`` ->
    ``tests/models/detm/test_detm.py``)."""
    parts = test_id.split("::")[0].split(".")
    while parts and parts[-1][:1].isupper():  # a test class
        parts.pop()
    return "/".join(parts) + ".py"


def per_file(d: dict[str, float]) -> collections.Counter:
    c: collections.Counter = collections.Counter()
    for k, v in d.items():
        c[file_of(k)] += v
    return c


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("report")
    ap.add_argument("previous", nargs="?")
    ap.add_argument("--top", type=int, default=30)
    a = ap.parse_args(argv)
    now = durations(a.report)
    before = durations(a.previous) if a.previous else None
    files, files0 = per_file(now), per_file(before) if before else None
    total = sum(now.values())
    print(f"{len(now)} tests, {total:.0f} test-s" + (
        f" (previous: {len(before)} tests, {sum(before.values()):.0f} test-s)" if before else ""))
    print(f"\n{'test-s':>8} {'change':>8} {'tests':>6}  file")
    counts = collections.Counter(file_of(k) for k in now)
    for f, s in files.most_common():
        if s < 1.0:
            continue
        change = f"{s - files0.get(f, 0.0):+8.1f}" if files0 is not None else " " * 8
        print(f"{s:8.1f} {change} {counts[f]:6d}  {f}")
    print(f"\nslowest {a.top} tests (s)")
    for k, s in sorted(now.items(), key=lambda kv: -kv[1])[:a.top]:
        print(f"{s:8.1f}  {k}")


if __name__ == "__main__":
    main()
