"""Which gallery examples the docs build can run here (imported by ``conf.py``).

An example states what it needs in a comment line of its header:

* ``# needs: shared-data <relative path>`` - a data set under ``$BREGCLUST_DATA`` (default
  ``../shared/data`` next to the repository);
* ``# needs: dask`` - Dask installed *and* ``BregmanKMeans`` accepting a Dask array.

Examples whose needs are not met are left out of the gallery (``ignore_pattern``) instead of
failing the build, and a guide page's reference to one of them becomes plain text (``conf.py``);
under ``BREGCLUST_REQUIRE_DATA=1`` a missing data set is an error.
"""

import importlib.util
import os
import re
from pathlib import Path

_NEEDS = re.compile(r"^# needs: (\S+)(?: (\S+))?\s*$", re.MULTILINE)


def data_home():
    env = os.environ.get("BREGCLUST_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[2] / "shared" / "data"


def dask_supported():
    """True when Dask is importable and ``BregmanKMeans.fit`` accepts a Dask array."""
    if importlib.util.find_spec("dask") is None:
        return False
    try:
        import dask.array as da
        import numpy as np

        from bregclust import BregmanKMeans

        X = da.from_array(np.arange(16.0).reshape(8, 2), chunks=4)
        BregmanKMeans(2, random_state=0).fit(X)
    except Exception:  # noqa: BLE001 - any failure means "not supported on this branch"
        return False
    return True


def skip_reasons(examples_dir):
    """``{file name: reason}`` of the examples whose needs are not met (the reason names the
    missing data set or Dask)."""
    reasons = {}
    have_dask = None
    for path in sorted(Path(examples_dir).glob("plot_*.py")):
        for kind, arg in _NEEDS.findall(path.read_text()):
            if kind == "shared-data":
                if not (data_home() / arg).exists():
                    if os.environ.get("BREGCLUST_REQUIRE_DATA") == "1":
                        raise RuntimeError(
                            f"{path.name} needs {data_home() / arg} (BREGCLUST_REQUIRE_DATA=1)")
                    reasons.setdefault(path.name, f"it needs the data set {arg}")
            elif kind == "dask":
                if have_dask is None:
                    have_dask = dask_supported()
                if not have_dask:
                    reasons.setdefault(path.name, "it needs Dask")
            else:
                raise ValueError(f"{path.name}: unknown need {kind!r}")
    return reasons


def skipped_examples(examples_dir):
    """Regex-escaped file names of the examples whose needs are not met."""
    return [re.escape(name) for name in skip_reasons(examples_dir)]
