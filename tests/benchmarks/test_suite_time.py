"""``benchmarks/suite_time.py``: the test suite's time per file from a JUnit XML report."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import suite_time  # noqa: E402

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites><testsuite name="pytest">
<testcase classname="tests.models.detm.test_detm.TestInvariance" name="test_a" time="2.5"/>
<testcase classname="tests.models.detm.test_detm" name="test_b[x-1]" time="1.0"/>
<testcase classname="tests.test_docs" name="test_c" time="4.0"/>
</testsuite></testsuites>
"""


def test_tests_add_up_per_file_with_their_classes(tmp_path, capsys):
    path = tmp_path / "r.xml"
    path.write_text(REPORT, encoding="utf-8")
    d = suite_time.durations(str(path))
    assert d["tests.models.detm.test_detm.TestInvariance::test_a"] == 2.5
    files = suite_time.per_file(d)
    assert files == {"tests/models/detm/test_detm.py": 3.5, "tests/test_docs.py": 4.0}
    prev = tmp_path / "p.xml"
    prev.write_text(REPORT.replace('time="4.0"', 'time="6.0"'), encoding="utf-8")
    suite_time.main([str(path), str(prev), "--top", "2"])
    out = capsys.readouterr().out
    assert "3 tests, 8 test-s (previous: 3 tests, 10 test-s)" in out
    assert "     4.0     -2.0      1  tests/test_docs.py" in out
    assert out.strip().endswith("2.5  tests.models.detm.test_detm.TestInvariance::test_a")


@pytest.mark.parametrize("test_id, file", [
    ("tests.test_docs::test_c", "tests/test_docs.py"),
    ("tests.models.detm.test_detm_label.TestSandwich::test_se", "tests/models/detm/test_detm_label.py"),
])
def test_file_of(test_id, file):
    assert suite_time.file_of(test_id) == file
