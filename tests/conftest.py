"""Shared test fixtures: the real-data location, the skip/require policy and the markers.

Tests that need ``../shared/data`` use the ``data_dir`` fixture or call :func:`require_data`
(directly or from a fixture). When the data are absent they are skipped, except under
``BREGCLUST_REQUIRE_DATA=1`` (set by ``.ci/run``), where a missing data set is a failure.

Markers (declared in ``pyproject.toml``):

``data``
    Set here, at collection, on every test that uses ``data_dir`` or calls ``require_data``
    (in its body or in one of its fixtures), so ``-m "not data"`` selects exactly the tests
    that run without the shared data. ``@pytest.mark.data("rel/path", ...)`` names the paths a
    test needs: they are required (skip, or fail under ``BREGCLUST_REQUIRE_DATA=1``) before the
    test runs. A test reaching ``require_data`` some other way (a helper function, one
    parameter of several) must carry the mark itself: :func:`require_data` fails when it is
    called from a test without it, so a missing mark cannot go unnoticed.
``slow``
    Long tests (benchmark scripts, the all-methods demo, real data over ~10 s); the default
    ``tox`` run deselects them and ``tox -e slow`` runs only them.
``nojit``
    Tests the ``nojit`` tox env runs with ``NUMBA_DISABLE_JIT=1``.
"""

import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]

_CURRENT = {"item": None}  # the test being set up or run, for the guard in require_data


def uniform_points(n=20, d=3, seed=0):
    """``n`` points uniform in the unit cube of dimension ``d``."""
    return np.random.RandomState(seed).rand(n, d)


def offset_blobs(offset):
    """Two tight blobs one unit apart, both ``offset`` away from the origin; and their labels."""
    rng = np.random.RandomState(0)
    y = np.repeat([0, 1], 50)
    return rng.normal(0, .1, (100, 2)) + y[:, None] + offset, y


def direction_tasks(seed=0, sizes=((14, 12), (11, 13)), d=5):
    """Tasks sharing cluster directions, rows in general position (no ties among distances):
    cluster ``c`` of task ``t`` has ``sizes[t][c]`` rows near ``4 e_((c + t) mod d) + 0.5``
    (plus uniform noise of width 0.6). Returns ``(Xs, ys)``."""
    rng = np.random.default_rng(seed)
    dirs = np.eye(d) * 4.0 + 0.5
    Xs, ys = [], []
    for t, part in enumerate(sizes):
        blocks = [dirs[(c + t) % d] + 0.6 * rng.random((m, d)) for c, m in enumerate(part)]
        Xs.append(np.vstack(blocks))
        ys.append(np.repeat(np.arange(len(part)), part))
    return Xs, ys


def noisy_tasks(seed=4, sizes=((15, 14), (12, 13, 11), (10, 12)), d=5, noise=3.0):
    """The rows of :func:`direction_tasks` plus uniform noise of width ``noise`` (a second
    generator from ``seed``): on the defaults unit rows and scaled rows of the spectral
    embedding part the third task differently, and with ``noise=5.0`` the candidate bases
    disagree enough that ``base_rule="consensus"`` takes kl on a task."""
    rng = np.random.default_rng(seed)
    return [X + noise * rng.random(X.shape) for X in direction_tasks(seed, sizes, d)[0]]


def quiet_fit(est, Xs):
    """``est.fit(Xs)`` without the UserWarning of a graph that is not fully connected."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return est.fit(Xs)


#: The name under which the ``cosh_generator`` fixture registers phi(x) = cosh(x) (modules
#: parametrise over it by this name: ``from conftest import COSH``).
COSH = "tests_cosh"

#: A symmetric positive definite 4 x 4 matrix: mahalanobis' ``A`` (its leading ``d x d`` block,
#: also positive definite, for ``d < 4`` features).
SPD = np.array([[2.0, 0.4, 0.0, 0.1], [0.4, 1.0, 0.1, 0.0], [0.0, 0.1, 0.5, 0.0],
                [0.1, 0.0, 0.0, 1.5]])


@pytest.fixture(scope="module")
def cosh_generator():
    """A user generator, phi(x) = cosh(x) and phi'(x) = sinh(x) (its own scalar functions: the
    ``CUSTOM`` kernels), registered as :data:`COSH` for the tests of a module
    (``pytestmark = pytest.mark.usefixtures("cosh_generator")``) and unregistered after them.
    Yields its name."""
    import math

    from bregclust import register_divergence, unregister_divergence

    register_divergence(COSH, phi=lambda x: math.cosh(x), dphi=lambda x: math.sinh(x),
                        overwrite=True)
    yield COSH
    unregister_divergence(COSH)


def run_isolated(code):
    """Run ``code`` in a fresh interpreter; return (returncode, stdout, stderr).

    For inputs that could crash the interpreter (a segfault in a kernel): the crash fails the
    one test instead of ending the session. ``code`` runs after ``import numpy as np,
    scipy.sparse as sp, math`` and ``from bregclust import *``.
    """
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    prefix = "import numpy as np, scipy.sparse as sp, math\nfrom bregclust import *\n"
    r = subprocess.run([sys.executable, "-c", prefix + textwrap.dedent(code)], env=env,
                       capture_output=True, text=True, timeout=300)
    return r.returncode, r.stdout, r.stderr


def data_home():
    """The real-data directory: ``BREGCLUST_DATA``, else ``../shared/data`` beside the repo."""
    env = os.environ.get("BREGCLUST_DATA")
    return Path(env) if env else (REPO.parent / "shared" / "data")


def require_data(*relpaths):
    """Return the data directory, skipping (or failing under BREGCLUST_REQUIRE_DATA=1) if any
    of ``relpaths`` is missing.

    Parameters
    ----------
    *relpaths : str
        Files or directories, relative to the data directory, the caller needs.

    Returns
    -------
    pathlib.Path
        The data directory.
    """
    item = _CURRENT["item"]
    if item is not None and item.get_closest_marker("data") is None:
        pytest.fail(f"{item.nodeid} calls require_data but is not marked data: add "
                    "@pytest.mark.data (or pytest.param(..., marks=pytest.mark.data))")
    home = data_home()
    missing = [p for p in relpaths if not (home / p).exists()]
    if not home.is_dir():
        missing = [str(home)]
    if missing:
        msg = f"real data missing under {home}: {missing} (set BREGCLUST_DATA)"
        if os.environ.get("BREGCLUST_REQUIRE_DATA") == "1":
            pytest.fail(msg)
        pytest.skip(msg)
    return home


@pytest.fixture
def data_dir():
    return require_data()


@pytest.fixture(autouse=True)
def _data_named_by_mark(request):
    """``@pytest.mark.data("rel/path", ...)`` requires those paths before the test runs."""
    mark = request.node.get_closest_marker("data")
    if mark is not None and mark.args:
        require_data(*mark.args)


def _calls_require_data(func):
    """Whether the code of ``func`` names ``require_data`` (a global or a local import)."""
    code = getattr(func, "__code__", None)
    return code is not None and "require_data" in code.co_names + code.co_varnames


def _needs_data(item):
    if "data_dir" in getattr(item, "fixturenames", ()):
        return True
    if _calls_require_data(getattr(item, "function", None)):
        return True
    info = getattr(item, "_fixtureinfo", None)
    for name, defs in (info.name2fixturedefs.items() if info is not None else ()):
        # the autouse fixture below calls require_data only for tests already marked data
        if name != "_data_named_by_mark" and any(_calls_require_data(d.func) for d in defs):
            return True
    return False


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("data") is None and _needs_data(item):
            item.add_marker(pytest.mark.data)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _CURRENT["item"] = item  # before any fixture of the item is set up


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    _CURRENT["item"] = None


def pytest_sessionfinish(session, exitstatus):
    """Under ``BREGCLUST_NO_TESTS_OK=1`` (the ``slow`` tox env), selecting no test is a pass."""
    if (exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED
            and os.environ.get("BREGCLUST_NO_TESTS_OK") == "1"):
        session.exitstatus = pytest.ExitCode.OK
