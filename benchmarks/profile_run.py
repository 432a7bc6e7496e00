"""Where the time of a whole ``assay run`` goes: py-spy over the command, stacks sorted by stage.

``profile_judge.py`` profiles the judge engine inside one process. A suite run does much more:
imports, loading and validating the suite, the target, the run store, the progress bar. This
script generates the same suites as ``suite_throughput.py``, runs ``python -m assay run`` under
``py-spy record --gil`` (only samples where Python holds the GIL, so idle threads waiting in the
thread pool do not count), and sorts every sampled stack into the first matching stage below.
Each stage is reported as its share of the samples and the seconds they stand for.

    python benchmarks/profile_run.py --cases 5000 --cache rerun          # cached re-run
    python benchmarks/profile_run.py --cases 100000 --evaluator exact_match --rate 100
    python benchmarks/profile_run.py --cases 10000 --raw /tmp/run.txt    # keep the stacks

``py-spy`` must be installed (``pip install py-spy``); it slows the profiled run somewhat, so
read the shares, not the seconds, as the result. A JSONL suite over 2,000 cases is streamed,
and every pass over its cases re-reads and re-validates the file; the stage names say which
pass each one is.
"""

from __future__ import annotations

import argparse
import collections
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import MockServerProcess, core_plan, machine_line, markdown_table, pin, pinned
from suite_throughput import Bench, write_suite

STAGES: tuple[tuple[str, str], ...] = (
    ("start-up: imports", r"_find_and_load"),
    ("loading and validating the suite (pass 1)", r"load_any_suite"),
    ("check_evaluator_names (pass 2)", r"check_evaluator_names"),
    ("Runner.preflight (pass 3)", r"Runner\.preflight"),
    ("snapshot: judge models, fingerprint (passes 4, 5)", r"snapshot \("),
    ("re-reading cases while running (pass 6)", r"iter_cases"),
    ("evaluator (judge call through the engine, or a cache read)", r"Evaluator\.evaluate"),
    ("target (CallableTarget, to_thread)", r"CallableTarget|to_thread"),
    ("run store writes (SQLAlchemy)", r"RunStore\.(record|_queue|flush)"),
    ("progress bar (rich)", r"ProgressBar|rich/"),
    ("result_row, case_verdict", r"result_row|case_verdict"),
    ("rest of the runner (workers, summary)",
     r"Runner\.run\.<locals>|Runner\._run_case|Runner\.run \(assay"),
    ("event loop, sockets, HTTP (aiohttp)", r"asyncio/|aiohttp/"),
    ("other", r""),
)
"""(stage, regex on the whole stack); a stack counts for the first stage that matches."""


def py_spy() -> str | None:
    """The py-spy executable: on PATH, or beside this interpreter (a virtualenv's bin)."""
    beside = Path(sys.executable).parent / "py-spy"
    return shutil.which("py-spy") or (str(beside) if beside.is_file() else None)


def stages(raw: Path) -> tuple[int, collections.Counter[str], collections.Counter[str]]:
    """(samples, samples per stage, samples per innermost frame) of a py-spy raw file."""
    total = 0
    per_stage: collections.Counter[str] = collections.Counter()
    leaves: collections.Counter[str] = collections.Counter()
    patterns = [(name, re.compile(regex)) for name, regex in STAGES]
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not count.isdigit():
            continue
        samples = int(count)
        total += samples
        leaves[stack.rsplit(";", 1)[-1]] += samples
        for name, pattern in patterns:
            if pattern.search(stack):
                per_stage[name] += samples
                break
    return total, per_stage, leaves


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--cases", type=int, default=5000)
    parser.add_argument("--evaluator", default="semantic_similarity",
                        choices=("semantic_similarity", "exact_match"))
    parser.add_argument("--cache", default="rerun", choices=("rerun", "off"),
                        help="rerun: fill the cache first, profile the fully cached re-run")
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--rate", type=int, default=500, help="py-spy samples per second")
    parser.add_argument("--top", type=int, default=15, help="innermost frames to list")
    parser.add_argument("--raw", help="keep py-spy's collapsed stacks in this file")
    args = parser.parse_args(argv)
    spy = py_spy()
    if spy is None:
        print("py-spy is not installed: pip install py-spy", file=sys.stderr)
        return 2
    judged = args.evaluator == "semantic_similarity"
    cache = "use" if args.cache == "rerun" and judged else "off"
    server_cores, client_cores = core_plan(True)
    pin(0, client_cores)
    workdir = Path(tempfile.mkdtemp(prefix="assay-profile-run-"))
    raw = Path(args.raw) if args.raw else workdir / "stacks.txt"
    try:
        with MockServerProcess(0.0, server_cores) as server:
            bench = Bench(server, workdir, client_cores)
            suite = write_suite(bench.scratch("suite"), 0, args.cases, args.evaluator)
            if cache == "use":
                filled = bench.assay_run(suite, args.concurrency, "use", args.cases)
                if filled.returncode:
                    print(f"filling the cache failed: {filled.problem()}", file=sys.stderr)
                    return 1
            server.reset()
            command = bench.command(suite, args.concurrency, cache, args.cases, judge=judged)
            done = subprocess.run(
                pinned([spy, "record", "--gil", "--rate", str(args.rate), "--format", "raw",
                        "--output", str(raw), "--", *command], client_cores),
                cwd=suite.parent, env=bench.env(suite.parent / "cache"), capture_output=True,
                text=True, timeout=300 + args.cases * 0.1, check=False)
            requests = int(server.stats()["requests"])
        if done.returncode != 0 or not raw.is_file():
            print(f"the profiled run failed ({done.returncode}):\n{done.stderr[-2000:]}",
                  file=sys.stderr)
            return 1
        total, per_stage, leaves = stages(raw)
        if not total:
            print("py-spy recorded no samples", file=sys.stderr)
            return 1
        print(f"# where `assay run` spends its time\n\n{machine_line()}\n\n{args.cases} cases, "
              f"{args.evaluator}, --concurrency {args.concurrency}, --cache {cache}"
              f"{' (re-run of a filled cache)' if cache == 'use' else ''}; server requests "
              f"{requests}; {total} samples at {args.rate} Hz (GIL held)\n")
        print(markdown_table(["stage", "share", "seconds", "ms per case"], [
            [name, f"{per_stage[name] / total:.0%}", f"{per_stage[name] / args.rate:.2f}",
             f"{per_stage[name] / args.rate / args.cases * 1000:.3f}"]
            for name, _ in STAGES]))
        print("\ninnermost frames (self time):\n")
        print(markdown_table(["frame", "share"], [
            [frame.replace("|", "/"), f"{count / total:.1%}"]
            for frame, count in leaves.most_common(args.top)]))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
