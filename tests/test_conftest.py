"""The data and no-test machinery of tests/conftest.py, checked on a throw-away test suite.

Each check runs pytest (in process) on a small suite that uses a copy of our conftest.py.
"""

from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

CONFTEST = (Path(__file__).parent / "conftest.py").read_text()
INI = """[pytest]
addopts = --strict-markers
markers =
    slow: long
    data(*relpaths): needs data
    nojit: interpreted too
"""
SUITE = '''
import pytest
from conftest import require_data


@pytest.fixture(scope="module")
def corpus():
    return require_data("corpus")


def _load():
    return require_data("table.csv")


def test_plain():
    assert True


def test_fixture(data_dir):
    assert data_dir.is_dir()


def test_body():
    assert require_data("corpus").is_dir()


def test_indirect_fixture(corpus):
    assert corpus.is_dir()


@pytest.mark.data("corpus")
def test_mark_with_path():
    assert True


@pytest.mark.parametrize("x", [1, pytest.param(2, marks=pytest.mark.data("corpus"))])
def test_param(x):
    assert x in (1, 2)


def test_helper_without_mark():
    _load()
'''


@pytest.fixture
def suite(pytester, monkeypatch):
    # the outer run's policy (CI sets BREGCLUST_REQUIRE_DATA=1) must not leak into the inner one
    monkeypatch.delenv("BREGCLUST_REQUIRE_DATA", raising=False)
    monkeypatch.delenv("BREGCLUST_NO_TESTS_OK", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makeini(INI)
    pytester.makepyfile(test_suite=SUITE)
    return pytester


def test_data_marks_are_set_by_the_fixtures(suite, monkeypatch):
    monkeypatch.setenv("BREGCLUST_DATA", str(suite.path / "absent"))
    res = suite.runpytest("-m", "data", "--collect-only", "-q")
    ids = {ln.split("::")[1] for ln in res.outlines if "::" in ln}
    assert ids == {"test_fixture", "test_body", "test_indirect_fixture", "test_mark_with_path",
                   "test_param[2]"}
    res = suite.runpytest("-m", "not data")
    res.assert_outcomes(passed=2, failed=1)  # test_plain, test_param[1]; the unmarked helper
    res.stdout.fnmatch_lines(["*test_helper_without_mark*calls require_data but is not marked*"])


def test_missing_data_skips_or_fails_under_require(suite, monkeypatch):
    monkeypatch.setenv("BREGCLUST_DATA", str(suite.path / "absent"))
    suite.runpytest("-m", "data").assert_outcomes(skipped=5)
    monkeypatch.setenv("BREGCLUST_REQUIRE_DATA", "1")
    # a failing fixture is an error, a failing test body a failure
    suite.runpytest("-m", "data").assert_outcomes(failed=1, errors=4)
    (suite.path / "present" / "corpus").mkdir(parents=True)
    monkeypatch.setenv("BREGCLUST_DATA", str(suite.path / "present"))
    suite.runpytest("-m", "data").assert_outcomes(passed=5)


def test_no_tests_selected_is_a_pass_only_when_allowed(suite, monkeypatch):
    assert suite.runpytest("-m", "slow").ret == pytest.ExitCode.NO_TESTS_COLLECTED
    monkeypatch.setenv("BREGCLUST_NO_TESTS_OK", "1")
    assert suite.runpytest("-m", "slow").ret == pytest.ExitCode.OK
