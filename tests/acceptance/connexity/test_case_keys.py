"""The keys Connexity's test cases carry beyond the specification's (``name``, ``description``,
``tags``, ``difficulty``, ``status``): accepted, checked, kept with the case; only active cases
run."""

from __future__ import annotations

import textwrap
from pathlib import Path

from assay.store.runs import RunStore
from tests.acceptance.connexity.harness import cli, has, run

SUITE = """\
    name: order-desk
    scoring: connexity
    execution:
      evaluators:
        - {type: connexity_judge, model: "custom:stub"}
    evalcases:
      - id: live
        name: Where is my order
        description: A customer asks for an order's status.
        tags: [orders, status]
        difficulty: hard
        status: active
        input: "⟦C02b⟧"
        metadata: {output: "It shipped."}
      - id: sketch
        status: draft
        input: "⟦C02b⟧"
        metadata: {output: "It shipped."}
      - id: old
        status: archived
        input: "⟦C02b⟧"
        metadata: {output: "It shipped."}
      - id: plain
        input: "⟦C02b⟧"
        metadata: {output: "It shipped."}
    """


def test_connexity_case_keys_are_kept_and_only_active_cases_run(stub, store, tmp_path: Path):
    suite = tmp_path / "cases.yaml"
    suite.write_text(textwrap.dedent(SUITE), encoding="utf-8")
    code, out, run_id = run(store, suite)
    assert code == 0, out
    records = {r.case_id: r for r in RunStore(store).case_records(run_id)}
    assert sorted(records) == ["live", "plain"]  # draft and archived cases do not run
    meta = records["live"].case.metadata
    assert {k: meta[k] for k in ("name", "description", "tags", "difficulty", "status")} == {
        "name": "Where is my order", "description": "A customer asks for an order's status.",
        "tags": ["orders", "status"], "difficulty": "hard", "status": "active"}
    assert has(out, "not run, as their status says: 1 archived case(s) (old); 1 draft "
                    "case(s) (sketch)")


def test_bad_values_of_the_case_keys_are_located(tmp_path: Path):
    suite = tmp_path / "bad.yaml"
    suite.write_text(textwrap.dedent("""\
        evalcases:
          - id: a
            input: hi
            difficulty: extreme
            status: done
            tags: 3
            name: [x]
        """), encoding="utf-8")
    code, out = cli("validate", str(suite))
    assert code == 2
    assert has(out, "bad.yaml:4:", "difficulty must be one of normal, hard, not 'extreme'")
    assert has(out, "bad.yaml:5:", "status must be one of draft, active, archived, not 'done'")
    assert has(out, "bad.yaml:6:", "tags must be text or a list of text")
    assert has(out, "bad.yaml:7:", "name must be text")
    suite.write_text("evalcases:\n  - {id: a, input: hi, status: draft}\n", encoding="utf-8")
    code, out = cli("validate", str(suite))
    assert code == 2 and has(out, "every case is draft, so none would run")
