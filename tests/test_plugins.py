"""Third-party plugins through the ``assay`` entry-point group, from a throw-away package."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

# Each test starts fresh interpreters: what only a new process shows.
pytestmark = pytest.mark.process

PLUGIN = textwrap.dedent('''
    """A throw-away assay plugin: one evaluator, one provider, one reporter, one target."""
    from assay import Score
    from assay.judges import Evaluator
    from assay.llm.providers.base import Provider
    from assay.registry import evaluator, provider, reporter, target_kind
    from assay.targets.base import Target
    from assay.types import Execution

    @evaluator
    class ShoutCheck(Evaluator):
        type = "shout_check"

        async def score(self, case, execution, ctx):
            text = execution.output_text()
            ok = text.isupper()
            return Score(name=self.name, value=1.0 if ok else 0.0, passed=ok)

    class Echo(Provider):
        structured_mode = "prompt"

        async def complete(self, request, timeout):
            return {"choices": [{"message": {"role": "assistant",
                    "content": '{"justification": "echo", "score": 100}'}}],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1}}

    @provider("echoplug")
    def make(spec):
        return Echo(spec)

    @reporter("count")
    def write_count(result, path):
        path.write_text(str(len(result.records)))

    @target_kind("shouter")
    class Shouter(Target):
        @classmethod
        def from_config(cls, config, base_dir, engine=None):
            return cls()

        async def run(self, case):
            return Execution(input=case.input, output=str(case.input).upper())
''')


def install(site: Path, entry: str = "demo = assay_demo_plugin", code: str = PLUGIN) -> None:
    """A package 'installed' on a path entry: its module and a dist-info naming the entry
    point, which is all importlib.metadata (and so pip-installed plugins) rely on."""
    site.mkdir(parents=True, exist_ok=True)
    (site / "assay_demo_plugin.py").write_text(code)
    info = site / "assay_demo_plugin-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: assay-demo-plugin\n"
                                   "Version: 0.1\n")
    (info / "entry_points.txt").write_text(f"[assay]\n{entry}\n")


def run(site: Path, cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(site)}
    return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                          text=True, cwd=cwd, env=env, timeout=120)


def test_a_plugin_evaluator_provider_target_and_reporter_work_from_a_suite(tmp_path):
    site = tmp_path / "site"
    install(site)
    project = tmp_path / "p"
    (project / ".assay").mkdir(parents=True)
    (project / ".assay" / "targets.yaml").write_text(
        "targets:\n  - name: loud\n    provider: shouter\n")
    (project / "EVAL.yaml").write_text(textwrap.dedent('''
        execution:
          target: loud
          evaluators:
            - type: shout_check
            - type: semantic_similarity
              model: echoplug:any
        evalcases:
          - id: a
            input: hello
            expected_output: HELLO
    '''))
    done = run(site, project, "run", "EVAL.yaml", "--store", "sqlite://", "--report",
               "count:count.txt")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "shout_check: mean 1.000" in done.stdout
    assert "semantic_similarity: mean 1.000" in done.stdout
    assert (project / "count.txt").read_text() == "1"
    valid = run(site, project, "validate", "EVAL.yaml")
    assert valid.returncode == 0, valid.stdout + valid.stderr


def test_the_python_api_finds_plugins_too(tmp_path):
    site = tmp_path / "site"
    install(site)
    code = textwrap.dedent('''
        import assay
        r = assay.evaluate([{"id": "a", "input": "q", "output": "LOUD"}],
                           evaluators=["shout_check"])
        print(r.records[0].score)
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(site)}, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1.0"


def run_unknown_type(tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """``assay run`` of a suite naming an evaluator type no one registers: the plugins in
    ``tmp_path / "site"`` load, looking for it."""
    project = tmp_path / "p"
    project.mkdir()
    (project / "EVAL.yaml").write_text(
        "execution:\n  evaluators:\n    - type: no_such_type\nevalcases:\n"
        "  - {id: a, input: x, metadata: {output: x}}\n")
    return run(tmp_path / "site", project, "run", "EVAL.yaml", "--store", "sqlite://")


def test_a_plugin_that_fails_to_import_is_named(tmp_path):
    install(tmp_path / "site", entry="broken = assay_missing_module")
    done = run_unknown_type(tmp_path)
    assert done.returncode == 2
    assert "the assay plugin 'broken' (assay_missing_module) failed to load" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(("code", "failure"), [
    ("import sys\nsys.exit(7)\n", "failed to load: SystemExit: called sys.exit(7)"),
    ("def register(registry):\n    raise KeyboardInterrupt\n",
     "failed to register: KeyboardInterrupt: "),
], ids=["exit_at_import", "interrupt_in_register"])
def test_a_plugin_that_exits_is_a_load_error_naming_it(tmp_path, code, failure):
    entry = "exits = assay_demo_plugin" + (":register" if "register" in code else "")
    install(tmp_path / "site", entry=entry, code=code)
    done = run_unknown_type(tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"the assay plugin 'exits' ({entry.split(' = ')[1]}) {failure}" in done.stderr
    assert "Traceback" not in done.stderr


TAKER = PLUGIN + textwrap.dedent('''
    @evaluator
    class MyEval(ShoutCheck):
        type = "my_eval"

    @evaluator
    class Impostor(ShoutCheck):
        type = "exact_match"
''')


@pytest.mark.parametrize("order", [["my_eval", "exact_match"], ["exact_match", "my_eval"]])
def test_a_plugin_registering_a_built_in_name_is_refused_whatever_the_order(tmp_path, order):
    install(tmp_path / "site", entry="taker = assay_demo_plugin", code=TAKER)
    code = textwrap.dedent(f'''
        import assay
        r = assay.evaluate([{{"id": "a", "input": "q", "output": "loud",
                             "expected_output": "loud"}}], evaluators={order!r})
        print(r.records[0].score)
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(tmp_path / "site")}, timeout=60)
    assert done.returncode != 0
    assert ("the assay plugin 'taker' (assay_demo_plugin) registers the built-in evaluator "
            "name 'exact_match'; built-in names are reserved") in done.stderr
    # the same from the command line: an error naming the plugin, not a traceback
    project = tmp_path / "p"
    project.mkdir()
    (project / "EVAL.yaml").write_text(
        "execution:\n  evaluators:\n" + "".join(f"    - type: {t}\n" for t in order)
        + "evalcases:\n  - {id: a, input: x, expected_output: LOUD, metadata: "
        "{output: LOUD}}\n")
    cli = run(tmp_path / "site", project, "run", "EVAL.yaml", "--store", "sqlite://")
    assert cli.returncode == 2, cli.stdout + cli.stderr
    assert "registers the built-in evaluator name 'exact_match'" in cli.stderr
    assert "Traceback" not in cli.stderr


def test_an_unknown_name_lists_what_is_registered(tmp_path):
    project = tmp_path / "p"
    project.mkdir()
    done = run(tmp_path, project, "run", "x.yaml", "--report", "nope:out.txt")
    assert done.returncode == 2
    assert "unknown reporter 'nope'; known: html, jsonl, junit, markdown, uipath" in done.stderr
