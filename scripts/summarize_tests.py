#!/usr/bin/env python3
# scripts/summarize_tests.py: per test tier, how many tests passed, failed and were skipped, and why
# SPDX-License-Identifier: Apache-2.0
"""Reads the JUnit files of a ctest run (tiers are the tests' ctest labels: unit, compile, gpu) and
of a pytest run, and prints one block per tier with the skip reasons, most frequent first:

    gpu (C++): 0 passed, 0 failed, 190 skipped
        190 skipped: no CUDA driver: libcuda.so.1: cannot open shared object file: ...

Without a device every GPU test skips, and this is where the reason shows (scripts/test.sh calls it
after the tests). Only the standard library; a missing file is reported, not an error.
"""

import argparse
import ast
import collections
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET


class Tier:
    def __init__(self):
        self.counts = collections.Counter()  # passed, failed, skipped, xfailed
        self.reasons = collections.Counter()  # skip reason -> tests

    def line(self, name):
        parts = [f"{self.counts[k]} {k}" for k in ("passed", "failed", "skipped")]
        if self.counts["xfailed"]:
            parts.append(f"{self.counts['xfailed']} xfailed")
        text = f"{name}: " + ", ".join(parts)
        if self.counts["skipped"] and self.counts["skipped"] == sum(self.counts.values()):
            text += " (every test skipped)"
        return text


def gtest_skip_reason(output, fallback):
    """The message after GoogleTest's "<file>:<line>: Skipped" line, up to "[  SKIPPED ]"."""
    lines = (output or "").splitlines()
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            reason = []
            for after in lines[i + 1:]:
                if after.startswith("[  SKIPPED ]"):
                    break
                reason.append(after.strip())
            if any(reason):
                return " ".join(r for r in reason if r)
    return fallback


def ctest_labels(build_dir):
    """Test name -> its ctest labels (the tier), from ctest's own description of the tests."""
    try:
        text = subprocess.run(["ctest", "--test-dir", build_dir, "--show-only=json-v1"], check=True,
                              capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"summarize_tests: cannot list the ctest tests of {build_dir}: {e}", file=sys.stderr)
        return {}
    labels = {}
    for test in json.loads(text).get("tests", []):
        for prop in test.get("properties", []):
            if prop.get("name") == "LABELS":
                labels[test["name"]] = prop.get("value") or []
    return labels


def read_ctest(junit, build_dir, tiers):
    labels = ctest_labels(build_dir)
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        tier = tiers[" ".join(labels.get(name) or ["unlabelled"]) + " (C++)"]
        skipped = case.find("skipped")
        if case.get("status") == "run" and case.find("failure") is None:
            tier.counts["passed"] += 1
        elif skipped is not None or case.get("status") in ("notrun", "disabled"):
            tier.counts["skipped"] += 1
            fallback = skipped.get("message") if skipped is not None else "not run"
            tier.reasons[gtest_skip_reason(case.findtext("system-out"), fallback)] += 1
        else:
            tier.counts["failed"] += 1


def pytest_skip_reason(skipped):
    """The reason of a skipped test; a module skipped whole says which module."""
    message = skipped.get("message") or "no reason given"
    if message != "collection skipped":
        return message
    try:  # the text is repr((path, line, "Skipped: <reason>"))
        path, _, text = ast.literal_eval((skipped.text or "").strip())
        return f"{text.removeprefix('Skipped: ')} (all of {os.path.basename(path)})"
    except (ValueError, SyntaxError, TypeError):
        return message


def read_pytest(junit, tiers):
    tier = tiers["python"]
    for case in ET.parse(junit).getroot().iter("testcase"):
        skipped = case.find("skipped")
        if skipped is not None and skipped.get("type") == "pytest.xfail":
            tier.counts["xfailed"] += 1
        elif skipped is not None:
            tier.counts["skipped"] += 1
            tier.reasons[pytest_skip_reason(skipped)] += 1
        elif case.find("failure") is not None or case.find("error") is not None:
            tier.counts["failed"] += 1
        else:
            tier.counts["passed"] += 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ctest-junit", help="ctest's JUnit file (--output-junit)")
    parser.add_argument("--ctest-dir", help="the build directory ctest ran in (for the tests' labels)")
    parser.add_argument("--pytest-junit", help="pytest's JUnit file (--junitxml)")
    args = parser.parse_args()

    tiers = collections.defaultdict(Tier)
    missing = []
    if args.ctest_junit:
        if os.path.exists(args.ctest_junit):
            read_ctest(args.ctest_junit, args.ctest_dir or os.path.dirname(args.ctest_junit), tiers)
        else:
            missing.append(f"C++: no results ({args.ctest_junit} was not written: did the build fail?)")
    if args.pytest_junit:
        if os.path.exists(args.pytest_junit):
            read_pytest(args.pytest_junit, tiers)
        else:
            missing.append(f"python: no results ({args.pytest_junit} was not written)")

    order = {"unit (C++)": 0, "compile (C++)": 1, "gpu (C++)": 2, "python": 9}
    for name in sorted(tiers, key=lambda n: (order.get(n, 5), n)):
        tier = tiers[name]
        print(tier.line(name))
        for reason, n in tier.reasons.most_common():
            print(f"    {n} skipped: {reason}")
    for line in missing:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
