"""LSSMTC / LSSTTC on the bundled digits tasks: the paper's 20 sweeps against the defaults.

For ``SharedSubspaceClustering(7)`` (one number of clusters for both tasks: cluster j has one
shared centre) from three k-means starts and for ``SharedSubspaceTransfer()`` (task 1 labelled,
task 2 the target), each with ``max_iter=20`` (the paper's T) and with the default
``max_iter``: sweeps run, seconds, the relative decrease of the objective in the last sweep
(the stopping test is ``tol=1e-6``) and, for LSSMTC, NMI per task. Data:
``bregclust.datasets.make_digits_tasks()`` (digits 0-5, 811 images; 3-9, 986 images).

Usage::

    python benchmarks/lssmtc_defaults.py
"""

import pathlib
import sys
import time
import warnings

import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))

import bregclust as bc  # noqa: E402
from bregclust.datasets import make_digits_tasks  # noqa: E402
from bregclust.metrics import nmi  # noqa: E402


def main():
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    d = make_digits_tasks()
    Xs, ys = d.Xs, d.ys
    default = bc.LSSMTC().max_iter
    print(f"# {d.description}")
    warnings.simplefilter("ignore")
    for mi in (20, default):
        for seed in range(3):
            t = time.perf_counter()
            e = bc.LSSMTC(7, max_iter=mi, random_state=seed).fit(Xs)
            h = e.objective_history_
            print(f"LSSMTC max_iter={mi} seed={seed}: {e.n_iter_} sweeps, "
                  f"{time.perf_counter() - t:.2f} s, last relative drop "
                  f"{(h[-2] - h[-1]) / h[-2]:.1e}, NMI "
                  + " / ".join(f"{nmi(y, lab):.3f}" for y, lab in zip(ys, e.labels_)))
    X = np.vstack(Xs)
    y = np.r_[ys[0], -np.ones(len(ys[1]), dtype=int)]
    for mi in (20, default):
        t = time.perf_counter()
        e = bc.LSSTTC(max_iter=mi).fit(X, y)
        h = e.objective_history_
        print(f"LSSTTC max_iter={mi}: n_components_={e.n_components_}, {e.n_iter_} sweeps, "
              f"{time.perf_counter() - t:.2f} s, last relative drop "
              f"{(h[-2] - h[-1]) / h[-2]:.1e}")


if __name__ == "__main__":
    main()
