"""Suites are parsed by libyaml when PyYAML has it, with the same values, positions, bounds and
error wording as PyYAML's own parser (which a broken file is parsed again with)."""

from __future__ import annotations

import pytest

from assay._util import yaml_source
from assay._util.yaml_source import YamlSyntaxError, _load, _PyLoader, load_yaml

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
    if yaml_source._CSafeLoader is None:
        pytest.fail("PyYAML without libyaml: suites load about 20 times slower")
    assert yaml_source._Loader is not _PyLoader


def test_both_parsers_give_the_same_values_positions_and_problems():
    fast = _load(SUITE, "s.yaml", yaml_source._Loader)
    slow = _load(SUITE, "s.yaml", _PyLoader)
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
    from tests.test_gc_relaxed import collections_during

    path = _big_suite(tmp_path, 3000)
    (suite, problems), collections = collections_during(lambda: check_eval_yaml(path))
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


TAGGED = """\
base: &base {type: contains, value: Paris, weight: 2}
merged:
  <<: *base
  value: Rome
shared: &list [1, 2.5, true, null, ~, 0x1F, 2026-01-02, "quoted", 'single']
again: *list
set: !!set {a, b}
binary: !!binary aGVsbG8=
pairs: !!omap [{a: 1}, {b: 2}]
2: int key
true: bool key
~: null key
2026-11-22: date key
nested: {deep: [[{x: *base}]]}
text: |
  a block
folded: >
  folded
  text
"""


@pytest.mark.parametrize("loader", ["fast", "pure"])
def test_values_are_exactly_what_pyyaml_builds(loader):
    import yaml

    kind = yaml_source._Loader if loader == "fast" else _PyLoader
    loaded = _load(TAGGED, "t.yaml", kind)
    assert loaded.data == yaml.safe_load(TAGGED)
    assert loaded.data["shared"] is loaded.data["again"]  # an alias is the same object
    assert loaded.data["nested"]["deep"][0][0]["x"] is loaded.data["base"]
    assert loaded.problems == []
    # merged keys are located where they were written, in the anchored mapping
    assert loaded.source.keys[("merged", "type")].line == 1
    assert loaded.source.keys[("merged", "value")].line == 4
    assert loaded.source.values[("again", 1)].line == 5  # an alias points at what it names


def test_a_key_overriding_a_merged_one_is_not_a_duplicate():
    """``<<: *base`` then ``value: Rome`` is how a merge is meant to be used; it was reported
    as a duplicate key. Two keys written in the same mapping still are."""
    text = "base: &b {value: Paris, x: 1}\nm:\n  <<: *b\n  value: Rome\n  value: Oslo\n"
    loaded = load_yaml(text, "m.yaml")
    assert loaded.data["m"] == {"value": "Oslo", "x": 1}
    assert [p.line for p in loaded.problems] == [5]


def test_duplicate_keys_are_found_inside_aliased_and_merged_values():
    text = "a: &a {x: 1, x: 2}\nb: *a\nc: {y: 1, y: 2}\n"
    fast = _load(text, "d.yaml", yaml_source._Loader)
    slow = _load(text, "d.yaml", _PyLoader)
    assert [str(p) for p in fast.problems] == [str(p) for p in slow.problems]
    assert len(fast.problems) == 3  # in a, again where b aliases it, and in c
    assert fast.data == {"a": {"x": 2}, "b": {"x": 2}, "c": {"y": 2}}


def _nest_block(depth: int) -> str:
    """A mapping nested ``depth`` deep by indentation alone (one space per level)."""
    return "".join(f"{' ' * i}k{i}:\n" for i in range(depth)) + f"{' ' * depth}leaf\n"


def test_the_event_pass_is_skipped_only_where_the_text_cannot_break_a_bound(monkeypatch):
    # A suite with no alias and little nesting cannot exceed the bounds, so its parse events
    # are not read a second time; anything that might is checked as before.
    calls = []
    real = yaml_source._check_bounds
    monkeypatch.setattr(yaml_source, "_check_bounds",
                        lambda parser, file: (calls.append(file), real(parser, file))[1])
    plain = SUITE.replace("&base", "").replace("*base", "{type: contains}")
    assert _load(plain, "plain.yaml", yaml_source._Loader).data["evalcases"][0]["id"] == "c1"
    assert calls == []
    _load(SUITE, "aliases.yaml", yaml_source._Loader)  # an alias: checked
    _load("a: " + "[" * 60 + "]" * 60 + "\n", "flow.yaml", yaml_source._Loader)
    _load(_nest_block(98), "block.yaml", yaml_source._Loader)
    assert calls == ["aliases.yaml", "flow.yaml", "block.yaml"]


@pytest.mark.parametrize("text", [
    _nest_block(101),                                # by indentation
    "- " * 101 + "x\n",                              # compact sequences on one line
    "a: " + "[" * 101 + "]" * 101 + "\n",            # flow sequences
    "a: " + "[b: " * 60 + "c" + "]" * 60 + "\n",     # single pairs: a mapping per bracket
])
def test_documents_over_the_depth_bound_are_still_refused(text):
    with pytest.raises(YamlSyntaxError, match="nest more than 100 deep"):
        _load(text, "deep.yaml", yaml_source._Loader)


def test_the_shortcut_never_passes_a_document_deeper_than_the_bound():
    # Random documents in block, flow and mixed styles: whenever the text says the bounds
    # cannot be exceeded, the composed document is indeed within them.
    import random

    import yaml
    from yaml.nodes import MappingNode, SequenceNode

    from assay._util.limits import MAX_DEPTH

    def depth(node):
        if isinstance(node, MappingNode):
            return 1 + max((max(depth(k), depth(v)) for k, v in node.value), default=0)
        if isinstance(node, SequenceNode):
            return 1 + max((depth(v) for v in node.value), default=0)
        return 0

    def value(levels, budget):
        if levels == 0 or budget[0] <= 0 or rng.random() < 0.05:
            return rng.choice(["x", 1, "a b", None, "- y", "[z]", "k: v"])
        budget[0] -= 1
        width = 1 if rng.random() < 0.8 else 2
        if rng.random() < 0.5:
            return [value(levels - 1, budget) for _ in range(width)]
        return {f"k{i}": value(levels - 1, budget) for i in range(width)}

    rng = random.Random(7)
    skipped = 0
    for _ in range(150):
        text = yaml.dump(value(rng.randint(1, 130), [200]),
                         default_flow_style=rng.choice([True, False, None]),
                         indent=rng.choice([2, 3, 4]), width=rng.choice([20, 80, 10**6]))
        if yaml_source._cannot_exceed_bounds(text):
            skipped += 1
            assert depth(yaml.compose(text, Loader=yaml_source._Loader)) <= MAX_DEPTH
    assert skipped > 20  # the property was tried on many documents, not vacuously
