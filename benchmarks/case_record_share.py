"""The sweep's hot path per case: building a finished case's typed record and appending it to the
run folder, against the CPU of the whole case (its agent turns, checks and record), same run."""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

GOAL = 0.05  # at most 5% of a case's CPU goes to its record and row
ROUNDS = int(os.environ.get("RECORD_ROUNDS", 20))
GRID = """\
name: record
personas: [friendly, technical, cautious]
models: [offline]
temperatures: [0.0, 1.0]
keep_cases: none
"""


def cpu() -> float:
    return time.thread_time()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        os.environ["TREADWISE_DATA_DIR"] = str(folder / "data")
        from experiments.define.grid import load_grid
        from experiments.run import cases as running
        from experiments.run.prepare import prepare
        from experiments.store.folder import FolderRun
        from experiments.store.record import CaseRow

        (folder / "grid.yaml").write_text(GRID)
        grid = load_grid(folder / "grid.yaml")
        run = FolderRun.create(grid, folder / "results")
        prepared = prepare(grid, run.folder)
        runner = prepared.runner(grid, run.folder, package_version="0", git_commit="bench")
        built, talks = running.case_record, []

        def keep(*args):  # the runner's own call, its arguments kept to build again below
            talks.append(args)
            return built(*args)

        running.case_record = keep
        todo = grid.cases()
        with run:
            for case in todo[:10]:  # warm: the graph, the tools, the regexes
                run.append(runner.run(case))
            talks.clear()
            started = cpu()
            for case in todo:
                run.append(runner.run(case))
            whole = (cpu() - started) / len(todo)
            started = cpu()
            for _ in range(ROUNDS):
                for args in talks:
                    run.append(built(*args))
            record = (cpu() - started) / (ROUNDS * len(talks))
            rows = [vars(built(*args).row) for args in talks]
            started = cpu()
            for _ in range(ROUNDS):
                for values in rows:
                    CaseRow(**values)
            typed = (cpu() - started) / (ROUNDS * len(rows))
        prepared.close()
    print(f"case_record_share: ratio {record / whole:.3f} (goal <= {GOAL:g})")
    print(f"  {len(todo)} offline cases: {whole * 1e3:.2f} ms CPU per case; its record built and "
          f"appended (row + transcript): {record * 1e6:.0f} us, of which typing the row "
          f"(CaseRow) {typed * 1e6:.0f} us")
    print(f"  machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
