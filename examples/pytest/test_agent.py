import pytest

from assay import Case, ExactMatch
from assay.integrations.pytest_plugin import assert_passes, suite_cases


def test_the_capital():
    assert_passes(ExactMatch(), Case(id="fr", expected_output="Paris"), "Paris")


@pytest.mark.parametrize("item", suite_cases("../quickstart/EVAL.yaml"))
def test_quickstart_case(item):
    assert item.item.case.id
