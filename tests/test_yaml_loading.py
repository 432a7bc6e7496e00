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
