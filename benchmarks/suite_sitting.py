"""One sitting of the test suite's speed: the README's whole-suite command at a baseline commit,
then at HEAD, one straight after the other on this machine (it is shared and noisy, so only
figures from one sitting are compared), each in a fresh worktree; the ratio after / before.

With --same-tests, a third run at HEAD keeps only the tests whose names the baseline also has
(a test's name is what follows its file's path: tests moved into tests/<package>/ keep theirs),
which says how much of the difference is the same tests running faster and how much the tests
added since. Renamed tests count as added; name a replacement with --also (a node id at HEAD);
this round's shortened ones (RENAMED) count as the same with the default baseline.

    python benchmarks/suite_sitting.py                      # 871bc85 (before this round) vs HEAD
    python benchmarks/suite_sitting.py --same-tests --also tests/test_soak.py::test_x
    python benchmarks/suite_sitting.py -- -m quick -k recall  # a short trial of the mechanics

Everything after `--` is added to each run's pytest command. Logs: <out>/{before,after,same}.log.
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The commit before the round that asked for a faster suite (issue 39's "today").
BASELINE = "871bc85"
# The baseline's tests that this round shortened under a new name, as they are called at HEAD
# (counted as the same tests with the default baseline): the soak (8 x 50 turns -> 8 x 30), the
# packaging install, the cluster's killed worker (300 cases -> fewer) and the local model's
# constrained calls (50 prompts in five chunks -> 16 in two).
RENAMED = ["tests/test_soak.py::test_eight_sessions_thirty_turns_each",
           "tests/test_packaging.py::"
           "test_pip_install_dot_runs_the_chat_app_alone_and_the_extra_adds_the_harness",
           "tests/experiments/run/test_cluster.py::test_two_workers_one_killed_mid_run_each_case_once",
           "tests/models/test_local_tool_calls.py::"
           "test_constrained_calls_name_only_bound_tools_with_arguments_their_schemas_accept[8]"]
COMMAND = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--durations=10", "-rfE"]
PLUGIN = '''"""Keep only the tests whose node ids are listed in $SUITE_SITTING_IDS."""
import os


def pytest_collection_modifyitems(config, items):
    keep = set(open(os.environ["SUITE_SITTING_IDS"], encoding="utf-8").read().splitlines())
    config.hook.pytest_deselected(items=[item for item in items if item.nodeid not in keep])
    items[:] = [item for item in items if item.nodeid in keep]
'''


def load() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def worktree(commit: str, where: Path) -> Path:
    subprocess.run(["git", "worktree", "add", "--detach", "-f", str(where), commit], cwd=REPO,
                   check=True, capture_output=True)
    return where


def collected(tree: Path, extra: list[str]) -> list[str]:
    done = subprocess.run([*COMMAND[:5], "--collect-only", "-q", "-n0", *extra], cwd=tree,
                          capture_output=True, text=True)
    return [line for line in done.stdout.splitlines() if "::" in line]


def name(node_id: str) -> str:
    return node_id.split("::", 1)[1]


def run(label: str, tree: Path, log: Path, extra: list[str],
        env: dict[str, str] | None = None) -> float:
    commit = subprocess.check_output(["git", "rev-parse", "--short", "HEAD"], cwd=tree,
                                     text=True).strip()
    print(f"{label}: {commit}, started {time.strftime('%H:%M:%S')} at load {load()}", flush=True)
    started = time.perf_counter()
    with log.open("w") as out:
        code = subprocess.run([*COMMAND, *extra], cwd=tree, stdout=out, stderr=subprocess.STDOUT,
                              env={**os.environ, **(env or {})}).returncode
    wall = time.perf_counter() - started
    text = log.read_text(errors="replace")
    summary = text.rstrip().splitlines()[-1] if text.strip() else "(no output)"
    print(f"  {wall:.1f} s wall, exit {code}, load {load()} at the end: {summary.strip('= ')}")
    if code == 5:
        sys.exit(f"{label} ran no test (log: {log}): there is nothing to compare")
    slowest = re.search(r"slowest 10 durations =+\n(.*?)\n(?:=|\n)", text, re.S)
    for line in (slowest.group(1).splitlines() if slowest else []):
        print(f"    {line[:150]}")
    return wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"the before commit ({BASELINE})")
    parser.add_argument("--same-tests", action="store_true",
                        help="also run HEAD on the tests whose names the baseline has")
    parser.add_argument("--also", action="append", default=[],
                        help="a HEAD node id to count as the same test (a renamed one)")
    parser.add_argument("--out", type=Path, help="where the logs go (a new folder by default)")
    args, extra = parser.parse_known_args()
    extra = extra[1:] if extra[:1] == ["--"] else extra
    out = args.out or Path(tempfile.mkdtemp(prefix="suite-sitting-"))
    out.mkdir(parents=True, exist_ok=True)
    trees = Path(tempfile.mkdtemp(prefix="suite-sitting-trees-"))
    before = worktree(args.baseline, trees / "before")
    after = worktree("HEAD", trees / "after")
    try:
        print(f"logs in {out}; the command: {shlex.join(['python', *COMMAND[1:], *extra])}")
        walls = {"before": run("before", before, out / "before.log", extra),
                 "after": run("after", after, out / "after.log", extra)}
        print(f"after / before: {walls['after'] / walls['before']:.2f}")
        if args.same_tests:
            names = {name(i) for i in collected(before, extra)}
            head = collected(after, extra)
            also = set(args.also) | (set(RENAMED) if args.baseline == BASELINE else set())
            same = [i for i in head if name(i) in names or i in also]
            (out / "same.ids").write_text("\n".join(same) + "\n", encoding="utf-8")
            (out / "suite_sitting_subset.py").write_text(PLUGIN, encoding="utf-8")
            print(f"same tests: {len(same)} of HEAD's {len(head)} (the baseline has "
                  f"{len(names)} names)")
            env = {"SUITE_SITTING_IDS": str(out / "same.ids"),
                   "PYTHONPATH": os.pathsep.join(filter(None, [str(out),
                                                               os.environ.get("PYTHONPATH")]))}
            walls["same"] = run("same tests at HEAD", after, out / "same.log",
                                ["-p", "suite_sitting_subset", *extra], env)
            print(f"same tests / before: {walls['same'] / walls['before']:.2f}; the tests added "
                  f"since: {walls['after'] - walls['same']:.1f} s of the after run")
    finally:
        for tree in (before, after):
            subprocess.run(["git", "worktree", "remove", "--force", str(tree)], cwd=REPO,
                           capture_output=True)
        trees.rmdir()


if __name__ == "__main__":
    main()
