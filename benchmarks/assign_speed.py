"""Assignment step vs the bare GEMM of the same shape (issue 2, section 7).

For every differentiable built-in divergence: dense X (n=100,000, d=100), k=50 centres; time of
``Divergence.assign`` (GEMM + fused argmin, chunked, with phi(X) precomputed once per fit as
BregmanKMeans does) divided by the time of the bare ``X @ U.T``. Target ratio <= 1.5.
The time of phi(X) itself (paid once per fit, not per iteration) is printed separately.

Run: python benchmarks/assign_speed.py [--n 100000 --d 100 --k 50]
"""

import argparse

import numpy as np
from _common import best_time, machine, table

from bregclust import get_divergence


def data_for(div, n, d, k, rng):
    if div.domain == "real":
        X = rng.normal(size=(n, d))
        U = rng.normal(size=(k, d))
    else:
        X = rng.gamma(2.0, 1.0, size=(n, d))
        if div.domain == "nonnegative":
            X[rng.random((n, d)) < 0.2] = 0.0
        U = rng.gamma(2.0, 1.0, size=(k, d)) + 0.1
    return X, U


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--k", type=int, default=50)
    ap.add_argument("--repeat", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(0)
    A = np.eye(a.d) + 0.1 * np.ones((a.d, a.d)) / a.d
    print(f"# assignment step, dense n={a.n}, d={a.d}, k={a.k}; {machine()}")
    rows = []
    for name in ["sqeuclidean", "mahalanobis", "kl", "itakura_saito", "l1_subgradient"]:
        div = get_divergence(name, A=A) if name == "mahalanobis" else get_divergence(name)
        X, U = data_for(div, a.n, a.d, a.k, rng)
        prepared = div.prepare(X)
        div.assign(X[:1000], U)  # compile
        t_prep = best_time(lambda: div.prepare(X), repeat=3)
        t_assign = best_time(lambda: div.assign(X, U, prepared=prepared), repeat=a.repeat)
        Xg = prepared[0]
        UT = np.ascontiguousarray(U.T) if name != "l1_subgradient" else np.ones((Xg.shape[1], a.k))
        t_gemm = best_time(lambda: Xg @ UT, repeat=a.repeat)
        note = " (GEMM of [X+, X-], 2d columns)" if name == "l1_subgradient" else ""
        rows.append((name + note, f"{t_gemm * 1e3:.1f}", f"{t_assign * 1e3:.1f}",
                     f"{t_assign / t_gemm:.2f}", f"{t_prep * 1e3:.1f}"))
    table(["divergence", "bare X @ U.T (ms)", "assign (ms)", "ratio (target <= 1.5)",
           "phi(X) once per fit (ms)"], rows)


if __name__ == "__main__":
    main()
