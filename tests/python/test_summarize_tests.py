# tests/python/test_summarize_tests.py: scripts/summarize_tests.py, the per-tier counts and skip reasons that
# scripts/test.sh prints last (on a machine without a GPU: every gpu test skipped, and why)
# SPDX-License-Identifier: Apache-2.0
import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "scripts"))
import summarize_tests  # noqa: E402

CTEST_JUNIT = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="4" failures="1" skipped="2">
  <testcase name="Validate.one" classname="Validate.one" status="run"><system-out>ok</system-out></testcase>
  <testcase name="Validate.two" classname="Validate.two" status="fail"><failure message="Failed"/></testcase>
  <testcase name="Sm90.a" classname="Sm90.a" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>[ RUN      ] Sm90.a
tests/gpu/test.cpp:12: Skipped
no CUDA driver: libcuda.so.1: cannot open shared object file
[  SKIPPED ] Sm90.a (0 ms)
</system-out></testcase>
  <testcase name="Sm90.b" classname="Sm90.b" status="notrun"><skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/>
    <system-out>tests/gpu/test.cpp:40: Skipped
no CUDA driver: libcuda.so.1: cannot open shared object file
[  SKIPPED ] Sm90.b (0 ms)
</system-out></testcase>
</testsuite>
"""

PYTEST_JUNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest">
<testcase classname="t" name="a" />
<testcase classname="t" name="b"><skipped type="pytest.skip" message="no 90a device: no driver">x</skipped></testcase>
<testcase classname="t" name="c"><skipped type="pytest.xfail" message="known" /></testcase>
<testcase classname="" name="tests.python.test_torch_op"><skipped message="collection skipped">('/r/tests/python/test_torch_op.py', 5, 'Skipped: torch is not installed')</skipped></testcase>
</testsuite></testsuites>
"""


def test_the_summary_counts_each_tier_and_groups_the_skip_reasons(tmp_path, monkeypatch, capsys):
    (tmp_path / "ctest.xml").write_text(CTEST_JUNIT)
    (tmp_path / "pytest.xml").write_text(PYTEST_JUNIT)
    labels = {"Validate.one": ["unit"], "Validate.two": ["unit"], "Sm90.a": ["gpu"], "Sm90.b": ["gpu"]}
    monkeypatch.setattr(summarize_tests, "ctest_labels", lambda build_dir: labels)
    monkeypatch.setattr(sys, "argv", ["summarize_tests.py", "--ctest-junit", str(tmp_path / "ctest.xml"),
                                      "--pytest-junit", str(tmp_path / "pytest.xml")])
    assert summarize_tests.main() == 0
    assert capsys.readouterr().out.splitlines() == [
        "unit (C++): 1 passed, 1 failed, 0 skipped",
        "gpu (C++): 0 passed, 0 failed, 2 skipped (every test skipped)",
        "    2 skipped: no CUDA driver: libcuda.so.1: cannot open shared object file",
        "python: 1 passed, 0 failed, 2 skipped, 1 xfailed",
        "    1 skipped: no 90a device: no driver",
        "    1 skipped: torch is not installed (all of test_torch_op.py)",
    ]


def test_missing_results_are_reported_not_raised(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(sys, "argv", ["summarize_tests.py", "--ctest-junit", str(tmp_path / "none.xml")])
    assert summarize_tests.main() == 0
    assert "C++: no results" in capsys.readouterr().out
