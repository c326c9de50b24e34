"""The mini-batch count update on large centres, this tree against another, in one run.

``MiniBatchBregmanKMeans`` on sparse counts (``--n`` x ``--d``, density 1 %, values 1-5), k = 20
(``k * d >= VECTOR_PARTS``: the centres that moved get their parts from the form's
``centre_parts``), 3 epochs of ``batch_size`` 1024, ``max_no_improvement=None``; kl and the
squared Euclidean divergence. Each tree runs in its own interpreter (``PYTHONPATH`` = the tree),
the trees alternate ``--repeat`` times, and the best CPU time (``time.process_time``) of each is
printed with the inertia (equal inertia: the same fit). Thread counts are set to 1 for both.

Run from the repository root::

    python benchmarks/minibatch_count_update.py --other /path/to/main/checkout
"""

import argparse
import os
import subprocess
import sys

WORKLOAD = r"""
import sys, time, warnings
import numpy as np, scipy.sparse as sp
warnings.simplefilter("ignore")
from bregclust import MiniBatchBregmanKMeans as MB
n, d = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
X = sp.random(n, d, density=0.01, random_state=0, format="csr",
              data_rvs=lambda m: rng.integers(1, 6, m).astype(float))
X = X[np.asarray(X.sum(axis=1)).ravel() > 0]
for name in ("kl", "sqeuclidean"):
    MB(20, divergence=name, batch_size=1024, max_iter=1, random_state=0,
       max_no_improvement=None).fit(X[:3000])  # kernels loaded before timing
    t = time.process_time()
    e = MB(20, divergence=name, batch_size=1024, max_iter=3, random_state=0,
           max_no_improvement=None).fit(X)
    print(name, time.process_time() - t, e.n_steps_, repr(float(e.inertia_)))
"""


def run(tree, n, d):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(tree), OMP_NUM_THREADS="1",
               OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1", NUMBA_NUM_THREADS="1")
    out = subprocess.run([sys.executable, "-c", WORKLOAD, str(n), str(d)], env=env,
                         capture_output=True, text=True, check=True).stdout
    return {line.split()[0]: line.split()[1:] for line in out.splitlines()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--other", default=here,
                    help="the tree to compare with (e.g. a checkout of main); default this tree")
    ap.add_argument("--tree", default=here)
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--d", type=int, default=5000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args(argv)
    best = {}
    for _ in range(a.repeat):
        for label, tree in (("other", a.other), ("this", a.tree)):
            for name, (sec, steps, inertia) in run(tree, a.n, a.d).items():
                key = (name, label)
                prev = best.get(key)
                best[key] = (min(float(sec), prev[0]) if prev else float(sec), steps, inertia)
    print(f"{a.n} x {a.d} sparse counts, k=20, best CPU s of {a.repeat} (one thread)")
    print(f"{'divergence':12s} {'other':>8s} {'this':>8s} {'ratio':>6s} steps  same inertia")
    for name in ("kl", "sqeuclidean"):
        o, t = best[(name, "other")], best[(name, "this")]
        print(f"{name:12s} {o[0]:8.3f} {t[0]:8.3f} {t[0] / o[0]:6.2f} {t[1]:>5s}  {o[2] == t[2]}")


if __name__ == "__main__":
    main()
