"""The GitHub Action (``action.yml`` at the repository's root): run a suite, compare the run
with a baseline, and tell the pull request.

``python -m assay.integrations.github_action`` is the action's one step of work, and a plain
program: its inputs are environment variables (``INPUT_SUITE``... as GitHub passes an action's
inputs), it runs ``assay`` commands as subprocesses (argument lists, never a shell), and it can
be run anywhere, which is how its tests run it: on a temporary git repository.

1. ``assay run SUITE`` into the store, named after the commit and tagged ``ci``;
2. the baseline: ``git:REF`` runs the suite as it is at that ref (a worktree of the
   repository, checked out by git) into the same store; ``auto`` is the stored baseline of
   the suite (``assay baseline set``), when the store has one; a run id names a stored run;
   ``none`` compares with nothing;
3. ``assay compare BASELINE RUN --markdown``: the comparison goes to the job's step summary
   (``$GITHUB_STEP_SUMMARY``), or the run's summary when there is no baseline;
4. an ``::error`` annotation on each case that failed, at the suite line that defines it;
5. ``assay report RUN --html`` (with ``--compare BASELINE``): the file the action uploads;
6. the exit code is the gate: the comparison's (1 on a regression, or when the run failed its
   own gates), else the run's.

Inputs: ``INPUT_SUITE`` (required), ``INPUT_BASELINE`` (``auto``), ``INPUT_STORE``
(``.assay/ci.db``), ``INPUT_REPORT`` (``assay-report.html``), ``INPUT_ARGS`` (more options for
``assay run``, split as a shell would split them but never run by one), ``INPUT_FAIL_ON``
(``regression``: the comparison's exit code; ``never``: always 0). Outputs, when
``$GITHUB_OUTPUT`` is set: ``run-id``, ``baseline-id``, ``exit-code``, ``report``.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

DEFAULT_STORE = ".assay/ci.db"
DEFAULT_REPORT = "assay-report.html"


class ActionError(Exception):
    """An input the action cannot work with, or a step that failed: the message says which."""


@dataclass
class Inputs:
    suite: Path
    baseline: str = "auto"
    store: str = DEFAULT_STORE
    report: Path = Path(DEFAULT_REPORT)
    args: list[str] | None = None
    fail_on: str = "regression"

    @classmethod
    def from_environment(cls, env: Mapping[str, str]) -> Inputs:
        def given(name: str, default: str = "") -> str:
            return env.get(f"INPUT_{name.upper()}", "").strip() or default

        suite = given("suite")
        if not suite:
            raise ActionError("the 'suite' input is required: the suite file to run "
                              "(EVAL.yaml, JSONL, CSV...)")
        fail_on = given("fail_on", "regression")
        if fail_on not in ("regression", "never"):
            raise ActionError(f"the 'fail-on' input is {fail_on!r}: expected regression or "
                              "never")
        try:
            args = shlex.split(given("args"))
        except ValueError as exc:
            raise ActionError(f"the 'args' input cannot be split into arguments: {exc}") \
                from None
        return cls(suite=Path(suite), baseline=given("baseline", "auto"),
                   store=given("store", DEFAULT_STORE), report=Path(given("report",
                                                                          DEFAULT_REPORT)),
                   args=args, fail_on=fail_on)


def _store_url(store: str) -> str:
    return store if "://" in store else f"sqlite:///{Path(store).resolve()}"


class Action:
    """One run of the action in ``workspace`` (the repository's checkout)."""

    def __init__(self, inputs: Inputs, workspace: Path, env: Mapping[str, str]) -> None:
        self.inputs = inputs
        self.workspace = workspace
        self.env = dict(env)
        self.url = _store_url(str(workspace / inputs.store) if "://" not in inputs.store
                              else inputs.store)

    def assay(self, *args: str, cwd: Path | None = None,
              check: bool = False) -> subprocess.CompletedProcess[str]:
        """``assay ARGS`` with this Python, its output passed through as it comes."""
        done = subprocess.run([sys.executable, "-m", "assay", *args],
                              cwd=cwd or self.workspace, env=self.env, text=True,
                              capture_output=True, check=False)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        if check and done.returncode not in (0, 1):
            raise ActionError(f"assay {args[0]} failed (exit {done.returncode}): "
                              f"{(done.stderr or done.stdout).strip()[-2000:]}")
        return done

    def newest_run(self) -> str:
        listed = subprocess.run([sys.executable, "-m", "assay", "runs", "--store", self.url,
                                 "--json", "-n", "1"], cwd=self.workspace, env=self.env,
                                text=True, capture_output=True, check=False)
        try:
            return str(json.loads(listed.stdout)[0]["id"])
        except (ValueError, IndexError, KeyError, TypeError):
            raise ActionError(f"no run found in {self.inputs.store} after assay run: "
                              f"{listed.stderr.strip()[-500:]}") from None

    def run_suite(self, where: Path, name: str, tags: Sequence[str]) -> str:
        """Run the suite as it is in ``where`` (a checkout); the new run's id."""
        suite = where / self.inputs.suite
        if not suite.exists():
            raise ActionError(f"the suite {self.inputs.suite} is not in {where}")
        argv = ["run", str(suite), "--store", self.url, "--name", name, "--no-results-file",
                *(a for tag in tags for a in ("--tag", tag)), *(self.inputs.args or [])]
        self.assay(*argv, cwd=where, check=True)
        return self.newest_run()

    def baseline(self, run_id: str) -> str | None:
        """The baseline run's id, making it when the baseline is a git ref; for ``auto``,
        the stored baseline of the run's suite and target, when there is one."""
        given = self.inputs.baseline
        if given == "none":
            return None
        if given.startswith("git:"):
            return self._run_at(given.removeprefix("git:"))
        if given == "auto":
            from assay.store.baselines import baseline_for
            from assay.store.runs import RunStore

            store = RunStore(self.url)
            try:
                found = baseline_for(store, run_id)
            finally:
                store.close()
            return found.run_id if found is not None and found.run_id != run_id else None
        return given

    def _run_at(self, ref: str) -> str:
        """The suite run as it is at ``ref``, from a worktree of the repository."""
        with tempfile.TemporaryDirectory(prefix="assay-baseline-") as folder:
            tree = Path(folder) / "tree"
            added = subprocess.run(["git", "-C", str(self.workspace), "worktree", "add",
                                    "--detach", str(tree), ref], text=True,
                                   capture_output=True, check=False)
            if added.returncode != 0:
                raise ActionError(f"cannot check out the baseline {ref!r}: "
                                  f"{added.stderr.strip()[-500:]}")
            try:
                return self.run_suite(tree, f"baseline {ref}", ["ci", "baseline"])
            finally:
                subprocess.run(["git", "-C", str(self.workspace), "worktree", "remove",
                                "--force", str(tree)], capture_output=True, check=False)

    def main(self) -> int:
        commit = os.environ.get("GITHUB_SHA", "")[:12] or "local"
        run_id = self.run_suite(self.workspace, f"ci {commit}", ["ci"])
        baseline = self.baseline(run_id)
        report = self.workspace / self.inputs.report
        report.parent.mkdir(parents=True, exist_ok=True)
        if baseline is not None:
            compared = self.assay("compare", baseline, run_id, "--store", self.url,
                                  "--markdown", check=True)
            code = compared.returncode
            self.assay("report", run_id, "--store", self.url, "--html", str(report),
                       "--compare", baseline, check=True)
        else:
            self.assay("report", run_id, "--store", self.url, "--markdown", "-", "--html",
                       str(report), check=True)
            code = self._run_gate(run_id)
        self._annotate(run_id)
        self._outputs({"run-id": run_id, "baseline-id": baseline or "", "exit-code": str(code),
                       "report": str(report)})
        return 0 if self.inputs.fail_on == "never" else code

    def _run_gate(self, run_id: str) -> int:
        shown = subprocess.run([sys.executable, "-m", "assay", "show", run_id, "--store",
                                self.url, "--summary", "--json"], cwd=self.workspace,
                               env=self.env, text=True, capture_output=True, check=False)
        try:
            return 0 if json.loads(shown.stdout).get("passed") else 1
        except ValueError:
            raise ActionError(f"cannot read run {run_id}'s summary") from None

    def _annotate(self, run_id: str) -> None:
        from assay.report.github import failure_annotations
        from assay.run.display import scale_for
        from assay.store.runs import RunStore

        store = RunStore(self.url)
        try:
            scale = scale_for(store.run_record(run_id))
            for line in failure_annotations(store.iter_case_records(run_id), self.workspace,
                                            scale=scale):
                print(line)
        finally:
            store.close()

    def _outputs(self, values: Mapping[str, str]) -> None:
        path = self.env.get("GITHUB_OUTPUT", "").strip()
        if path:
            with open(path, "a", encoding="utf-8") as out:
                for key, value in values.items():
                    out.write(f"{key}={value.replace(chr(10), ' ')}\n")


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    """Run the action; its exit code."""
    env = dict(os.environ if env is None else env)
    workspace = Path(env.get("GITHUB_WORKSPACE") or os.getcwd()).resolve()
    try:
        action = Action(Inputs.from_environment(env), workspace, env)
        return action.main()
    except ActionError as exc:
        from assay.report.github import escape_data

        print(f"::error title=assay::{escape_data(str(exc))}")
        print(f"assay action: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
