#!/usr/bin/env python3
# scripts/gtest_shards.py: runs one GoogleTest binary as parallel shards that each keep one process
# (one CUDA context, one in-memory kernel cache) for many tests, and survive hangs and crashes
# SPDX-License-Identifier: Apache-2.0
"""Runs the tests of a GoogleTest binary in --shards processes at once. Tests are dealt to shards by
their parameter (an operator's tests share its compiled kernels), largest groups first. A shard
process that hangs in a test for --test-timeout seconds, crashes, or fails a test (a kernel trap
leaves the CUDA context unusable) is ended; the test is recorded as failed with its output, and the
shard goes on with its remaining tests in a fresh process. Prints each failure, then one line per
outcome and the skip reasons, and the plain closing line 'N passed, N failed, N skipped'.
Exit code 1 if any test failed or did not run before --deadline seconds.

    scripts/gtest_shards.py build/gpu/tests/gemmops_gpu_tests --shards 8 --test-timeout 120 \\
        [--filter 'Sm90*'] [--deadline 420] [--junit out.xml] [--label gpu]
"""

import argparse
import collections
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

STATUS = re.compile(r"^\[ +(RUN|OK|FAILED|SKIPPED) +\] ([^ ,]+)")


def list_tests(binary, gtest_filter):
    args = [binary, "--gtest_list_tests"]
    if gtest_filter:
        args.append("--gtest_filter=" + gtest_filter)
    text = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    tests, suite = [], None
    for line in text.splitlines():
        if not line.strip() or line.startswith("Running main"):
            continue
        if not line.startswith(" "):
            suite = line.strip()
        else:
            tests.append(suite + line.split()[0])
    return tests


def deal(tests, shards):
    """Groups tests by parameter (the part after the last '/'), then deals the groups, largest first,
    to the least loaded shard; order inside a shard is the binary's order."""
    groups = collections.OrderedDict()
    for t in tests:
        key = t.rsplit("/", 1)[1] if "/" in t else t
        groups.setdefault(key, []).append(t)
    load = [[] for _ in range(shards)]
    for key in sorted(groups, key=lambda k: -len(groups[k])):
        min(load, key=len).extend(groups[key])
    index = {t: i for i, t in enumerate(tests)}
    return [sorted(s, key=index.get) for s in load if s]


class Result:
    def __init__(self, name):
        self.name, self.status, self.seconds, self.output, self.reason = name, "notrun", 0.0, [], ""


def skip_reason(lines):
    for i, line in enumerate(lines):
        if line.endswith(": Skipped"):
            return " ".join(x.strip() for x in lines[i + 1:] if x.strip() and not x.startswith("[")).strip()
    return ""


def run_shard(binary, tests, results, args, stop, env, flagfile):
    pending = list(tests)
    while pending and not stop.is_set():
        # The test list goes through a flag file: a long --gtest_filter passes the kernel's limit on one argument.
        with open(flagfile, "w") as f:
            f.write("--gtest_filter=" + ":".join(pending) + "\n")
        proc = subprocess.Popen([binary, "--gtest_color=no", "--gtest_flagfile=" + flagfile],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace",
                                env=env, start_new_session=True)
        lines = queue.Queue()
        reader = threading.Thread(target=lambda: [lines.put(l.rstrip("\n")) for l in proc.stdout] + [lines.put(None)],
                                  daemon=True)
        reader.start()
        current, started, restart = None, time.monotonic(), False
        while True:
            try:
                line = lines.get(timeout=1.0)
            except queue.Empty:
                line = ""
            if line is None:
                break
            if current is not None and line:
                current.output.append(line)
            m = STATUS.match(line) if line else None
            if m and m.group(2) in results:
                what, name = m.groups()
                if what == "RUN":
                    current, started = results[name], time.monotonic()
                    current.output = [line]
                elif current is not None and name == current.name:
                    current.seconds = time.monotonic() - started
                    current.status = {"OK": "passed", "FAILED": "failed", "SKIPPED": "skipped"}[what]
                    if what == "SKIPPED":
                        current.reason = skip_reason(current.output)
                    pending.remove(name)
                    current = None
                    if what == "FAILED":  # a trapped kernel leaves the context unusable: start afresh
                        restart = True
                        break
            if current is not None and time.monotonic() - started > args.test_timeout:
                current.status, current.seconds = "failed", time.monotonic() - started
                current.reason = f"hang: no result after {args.test_timeout:.0f} s (process ended)"
                pending.remove(current.name)
                restart = True
                break
            if stop.is_set():
                break
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        if stop.is_set():  # the deadline ended it: what had not finished is reported as not run
            break
        if current is not None and current.status == "notrun":  # the process died inside a test
            current.status = "failed"
            current.reason = f"the test process ended with exit code {proc.returncode} inside this test"
            pending.remove(current.name)
        elif not restart and pending and not stop.is_set():
            # Exited between tests with some not run: record them once, don't loop.
            for name in pending:
                results[name].status, results[name].reason = "failed", f"not run: process exited {proc.returncode}"
            pending = []


def write_junit(path, results, label):
    suite = ET.Element("testsuite", name=label, tests=str(len(results)))
    for r in results.values():
        case = ET.SubElement(suite, "testcase", name=r.name, classname=label, time=f"{r.seconds:.3f}")
        if r.status == "skipped":
            ET.SubElement(case, "skipped", message=r.reason)
        elif r.status != "passed":
            f = ET.SubElement(case, "failure", message=r.reason or r.status)
            f.text = "\n".join(r.output[-80:])
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary")
    ap.add_argument("--shards", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--filter", default="")
    ap.add_argument("--test-timeout", type=float, default=120.0)
    ap.add_argument("--deadline", type=float, default=0.0, help="seconds for the whole run (0: none)")
    ap.add_argument("--junit", default="")
    ap.add_argument("--label", default="gtest")
    args = ap.parse_args()

    tests = list_tests(args.binary, args.filter)
    if not tests:
        print(f"{args.label}: no test matches", file=sys.stderr)
        return 1
    results = collections.OrderedDict((t, Result(t)) for t in tests)
    stop = threading.Event()
    env = dict(os.environ)
    start = time.monotonic()
    shards = deal(tests, max(1, args.shards))
    workdir = tempfile.mkdtemp(prefix="gtest_shards_")
    threads = [threading.Thread(target=run_shard, args=(args.binary, s, results, args, stop, env,
                                                         os.path.join(workdir, f"shard{i}.flags")))
               for i, s in enumerate(shards)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(timeout=1.0)
            if args.deadline and time.monotonic() - start > args.deadline:
                stop.set()
    wall = time.monotonic() - start

    counts = collections.Counter(r.status for r in results.values())
    for r in results.values():
        if r.status == "failed":
            print(f"--- FAILED {r.name} ({r.seconds:.1f} s){': ' + r.reason if r.reason else ''}")
            print("\n".join(r.output[-40:]))
    not_run = [r for r in results.values() if r.status == "notrun"]
    for r in not_run:
        r.reason = "not run: the deadline passed"
    reasons = collections.Counter(r.reason for r in results.values() if r.status == "skipped")
    slowest = sorted(results.values(), key=lambda r: -r.seconds)[:5]
    print(f"{args.label}: {len(tests)} tests in {len(shards)} shards, {wall:.0f} s; slowest: " +
          ", ".join(f"{r.name} {r.seconds:.1f} s" for r in slowest))
    for reason, n in reasons.most_common():
        print(f"    {n} skipped: {reason}")
    if not_run:
        print(f"    {len(not_run)} not run before the deadline ({args.deadline:.0f} s)")
    if args.junit:
        write_junit(args.junit, results, args.label)
    failed = counts["failed"] + len(not_run)
    print(f"{args.label}: {counts['passed']} passed, {failed} failed, {counts['skipped']} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
