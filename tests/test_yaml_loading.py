"""Suites are parsed by libyaml when PyYAML has it, with the same values, positions, bounds and
error wording as PyYAML's own parser (which a broken file is parsed again with)."""

from __future__ import annotations

import pytest

from assay import yaml_source
from assay.yaml_source import YamlSyntaxError, _BoundedLoader, _load, load_yaml

SUITE = """\
description: "a suite"
base: &base {type: contains, value: Paris}
evalcases:
  - id: c1
    input: "What is the capital of France?"
    expected_output: |
      Paris
    evaluators: [*base, {type: exact_match}]
  - id: c1
    input: [a, b]
"""


def test_libyaml_is_used_when_pyyaml_has_it():
    if yaml_source.CParser is None:
        pytest.fail("PyYAML without libyaml: suites load about 20 times slower")
    assert yaml_source._Loader is not _BoundedLoader


def test_both_parsers_give_the_same_values_positions_and_problems():
    fast = _load(SUITE, "s.yaml", yaml_source._Loader)
    slow = _load(SUITE, "s.yaml", _BoundedLoader)
    assert fast.data == slow.data
    assert fast.source.keys == slow.source.keys and fast.source.values == slow.source.values
    assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]


def test_broken_text_reads_as_pyyaml_words_it():
    with pytest.raises(YamlSyntaxError) as caught:
        load_yaml("evalcases:\n  - id: a\n    input: [unclosed\n", "s.yaml")
    assert "s.yaml:4:1: invalid YAML: expected ',' or ']', but got '<stream end>'" in \
        str(caught.value)


def test_bounds_hold_on_the_fast_parser():
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n"
        for i in range(6))
    with pytest.raises(YamlSyntaxError, match="aliases expand the document"):
        _load(bomb, "bomb.yaml", yaml_source._Loader)
    with pytest.raises(YamlSyntaxError, match="refers to a value that contains it"):
        _load("a: &x [1, *x]\n", "r.yaml", yaml_source._Loader)
    with pytest.raises(YamlSyntaxError, match="not allowed in YAML"):
        _load("a: b\x07\n", "c.yaml", yaml_source._Loader)


def _big_suite(tmp_path, cases: int):
    lines = ["execution:", "  evaluators:", "    - {name: same, type: exact_match}",
             "evalcases:"]
    for i in range(cases):
        lines += [f"  - id: c{i}", f"    input: question {i}", f"    expected_output: a{i}"]
    path = tmp_path / "EVAL.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_large_suite_loads_without_the_garbage_collector_walking_it(tmp_path):
    """The collector took 0.9 s of 2.1 s loading 10,000 cases; the load now pauses it."""
    import gc

    from assay.suites.evalyaml import check_eval_yaml

    path = _big_suite(tmp_path, 3000)
    collections: list[int] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(info["generation"])

    gc.collect()
    gc.callbacks.append(count)
    try:
        suite, problems = check_eval_yaml(path)
    finally:
        gc.callbacks.remove(count)
    assert problems == [] and suite is not None and suite.count() == 3000
    assert len(collections) <= 1, collections  # one young pass as the collector comes back
    assert gc.isenabled()


def test_the_collector_is_restored_as_it_was_even_when_loading_fails(tmp_path):
    import gc

    from assay.suites.evalyaml import check_eval_yaml

    broken = tmp_path / "EVAL.yaml"
    broken.write_text("evalcases: [\n")
    assert check_eval_yaml(broken)[1]  # a located syntax problem
    assert gc.isenabled()
    gc.disable()
    try:
        check_eval_yaml(_big_suite(tmp_path, 3))
        assert not gc.isenabled()
    finally:
        gc.enable()
