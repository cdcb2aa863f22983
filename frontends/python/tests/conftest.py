# The tests import the package under test from PYTHONPATH (the build tree's <build>/python, set by
# the ctest entry test_python) or from an installed wheel; numpy is the oracle.
import numpy as np
import pytest


@pytest.fixture(autouse=True)
def _seed():
    np.random.seed(0)
