"""What tells runs apart: a name, tags and notes given when a run starts and changed later (in
Python, on the command line and over the API), the suite's description, the git commit,
branch and uncommitted changes of the suite's tree and the agent's version, recorded by
themselves; runs found by tag, branch and text; and a comparison of runs of different code
that says what changed instead of "made the same way"."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

import assay
from assay._util.git import CI_BRANCH_VARIABLES, GitTree, git_tree
from assay.analysis.compare import compare_stored
from assay.store import queries
from assay.store.runs import RunStore
from assay.types.config import Gates
from tests.assay_process import run_assay

SUITE = """description: Capitals of Europe
execution:
  target: agent
  evaluators:
    - {name: exact, type: exact_match}
evalcases:
  - {id: fr, input: France?, expected_output: Paris}
  - {id: de, input: Germany?, expected_output: Berlin}
"""


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    _git(root, "init", "-q", "-b", "feature/fast-agent")
    _git(root, "config", "user.email", "ci@example.com")
    _git(root, "config", "user.name", "CI")
    (root / "EVAL.yaml").write_text(SUITE)
    (root / "agent.py").write_text("def answer(question: str) -> str:\n"
                                   "    return {'France?': 'Paris'}.get(question, '?')\n")
    (root / ".assay").mkdir()
    (root / ".assay" / "targets.yaml").write_text(
        "targets:\n  - {name: agent, provider: python, function: 'agent:answer'}\n")
    _git(root, "add", "EVAL.yaml", "agent.py", ".assay/targets.yaml")
    _git(root, "commit", "-q", "-m", "suite")
    return root


def test_the_tree_state_is_read_from_any_tree_in_any_state(repo, tmp_path, monkeypatch):
    """Commit, branch and uncommitted changes as git tells them: none for a folder outside a
    repository or a repository with no commit yet; on no branch, the branch CI names."""
    for name in CI_BRANCH_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    outside = tmp_path / "outside"
    outside.mkdir()
    assert git_tree(outside) is None
    empty = tmp_path / "empty"
    empty.mkdir()
    _git(empty, "init", "-q")
    assert git_tree(empty) is None
    head = _git(repo, "rev-parse", "HEAD")
    clean = GitTree(commit=head, branch="feature/fast-agent", dirty=False)
    (repo / "notes.txt").write_text("untracked\n")
    assert git_tree(repo / "EVAL.yaml") == git_tree(repo) == clean
    (repo / "agent.py").write_text("changed\n")
    assert git_tree(repo) == GitTree(commit=head, branch="feature/fast-agent", dirty=True)
    _git(repo, "checkout", "-q", "--", "agent.py")
    _git(repo, "checkout", "-q", "--detach")
    assert git_tree(repo) == GitTree(commit=head, branch=None, dirty=False)
    monkeypatch.setenv("GITHUB_HEAD_REF", "pr-branch")
    assert git_tree(repo) == GitTree(commit=head, branch="pr-branch", dirty=False)


def test_a_run_records_its_name_tags_notes_tree_and_agent_version(repo, tmp_path, monkeypatch):
    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    monkeypatch.delenv("GITHUB_REF_NAME", raising=False)
    url = f"sqlite:///{tmp_path}/runs.db"
    result = assay.evaluate(repo / "EVAL.yaml", store=url, run_name="nightly",
                            tags=["prod", "prod", "v2"], notes="after the prompt change",
                            agent_version="2.1.0", gates=Gates(max_failed=None))
    store = RunStore(url)
    run = store.run_record(result.run_id)
    assert (run.name, run.tags, run.notes) == ("nightly", ["prod", "v2"],
                                               "after the prompt change")
    assert run.config.description == "Capitals of Europe"
    assert run.config.agent_version == "2.1.0"
    assert run.config.git is not None
    assert run.config.git.commit == _git(repo, "rev-parse", "HEAD")
    assert run.config.git.branch == "feature/fast-agent" and run.config.git.dirty is False
    recorded = run.config.model_dump(mode="json")["run"]  # kept beside the config, not in it
    assert not {"run_name", "tags", "notes", "agent_version"} & set(recorded)

    (repo / "EVAL.yaml").write_text(SUITE.replace("Europe", "Europe, edited"))
    again = assay.evaluate(repo / "EVAL.yaml", store=url, agent_version="2.2.0",
                           gates=Gates(max_failed=None))
    second = store.run_record(again.run_id)
    assert second.config.git is not None and second.config.git.dirty is True
    assert (second.name, second.tags) == (None, [])
    diff = compare_stored(store, run.id, second.id).config_diff
    changed = {c.field: (c.old_value, c.new_value) for c in diff.identity_changes}
    assert changed == {"agent.version": ("2.1.0", "2.2.0"), "git.dirty": (False, True)}
    assert diff.changed


def test_runs_are_found_by_tag_branch_and_text_and_renamed_later(repo, tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    first = assay.evaluate(repo / "EVAL.yaml", store=url, run_name="Baseline 100%_ok",
                           tags=["prod"], gates=Gates(max_failed=None)).run_id
    second = assay.evaluate(repo / "EVAL.yaml", store=url, tags=["dev"],
                            gates=Gates(max_failed=None)).run_id
    store = RunStore(url)

    def found(**where: str) -> list[str]:
        return [r.id for r in queries.list_runs(store, queries.RunFilter(**where))[0]]

    assert found(tag="prod") == [first] and found(tag="dev") == [second]
    assert found(tag="nope") == []
    assert set(found(branch="feature/fast-agent")) == {first, second}
    assert found(branch="main") == []
    assert found(text="BASELINE 100%") == [first]
    assert found(text="100%_x") == []  # LIKE wildcards are text
    store.annotate_run(second, name="Candidate", add_tags=["prod"], remove_tags=["dev"])
    assert set(found(tag="prod")) == {first, second} and found(tag="dev") == []
    renamed = store.annotate_run(second, name="", notes="checked by hand")
    assert renamed.name is None and renamed.notes == "checked by hand"
    item = next(r for r in queries.list_runs(store, queries.RunFilter())[0] if r.id == first)
    assert item.description == "Capitals of Europe" and item.git is not None
    assert queries.delete_run(store, first)
    assert found(tag="prod") == [second]


@pytest.mark.process
def test_the_command_line_names_tags_and_annotates_runs(repo, tmp_path):
    url = f"sqlite:///{tmp_path}/runs.db"
    done = run_assay(["run", str(repo / "EVAL.yaml"), "--store", url, "--name", "cli run",
                      "--tag", "ci", "--tag", "pr-7", "--agent-version", "abc123",
                      "--no-results-file", "--max-failed", "1"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    store = RunStore(url)
    run = store.run_records(1)[0]
    assert (run.name, run.tags, run.config.agent_version) == ("cli run", ["ci", "pr-7"],
                                                              "abc123")
    done = run_assay(["annotate", run.id, "--store", url, "--untag", "ci", "--tag", "ok",
                      "--notes", "fine"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "ok, pr-7" in done.stdout
    bad = run_assay(["annotate", run.id, "--store", url, "--tag", "a,b"], cwd=tmp_path)
    assert bad.returncode == 2 and "--tag" in bad.stderr


def test_the_api_names_tags_and_notes_a_run(tmp_path):
    pytest.importorskip("fastapi")
    from assay.testing.runs import write_run
    from tests.server_support import serve

    url = f"sqlite:///{tmp_path}/runs.db"
    store = RunStore(url)
    run_id = write_run(store, 3)
    store.close()
    with serve(url) as served, served.client() as api:
        patched = api.patch(f"/runs/{run_id}", json={"name": "first try", "tags": ["a", "b"],
                                                     "notes": "<b>bold</b>"})
        assert patched.status_code == 200, patched.text
        body = patched.json()
        assert (body["name"], body["tags"], body["notes"]) == ("first try", ["a", "b"],
                                                               "<b>bold</b>")
        listed = api.get("/runs", params={"tag": "b"}).json()["items"]
        assert [r["id"] for r in listed] == [run_id] and listed[0]["name"] == "first try"
        assert api.get("/runs", params={"q": "FIRST"}).json()["total"] == 1
        for bad in ({"tags": ["a,b"]}, {"name": "two\nlines"}, {"tags": "a"},
                    {"is_baseline": "yes"}, {"colour": "red"}):
            assert api.patch(f"/runs/{run_id}", json=bad).status_code == 400, bad
        assert api.patch(f"/runs/{run_id}", json={"is_baseline": True}).json()["is_baseline"]
        assert api.get(f"/runs/{run_id}").json()["name"] == "first try"
