"""Shared test fixtures: the real-data location and the skip/require policy.

Tests that need ``../shared/data`` call :func:`require_data` (or use the ``data_dir`` fixture).
When the data are absent they are skipped, except under ``BREGCLUST_REQUIRE_DATA=1`` (set by
``.ci/run``), where a missing data set is a failure.
"""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def data_home():
    env = os.environ.get("BREGCLUST_DATA")
    return Path(env) if env else (REPO.parent / "shared" / "data")


def require_data(*relpaths):
    """Return the data directory, skipping (or failing under BREGCLUST_REQUIRE_DATA=1) if any
    of ``relpaths`` is missing."""
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
