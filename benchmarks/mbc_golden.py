"""Golden labels of MultitaskBregmanClustering: write every fitted array of a fixed set of fits
to an ``.npz`` file, or compare two such files.

Run it once per code version in separate processes (the PYTHONPATH selects the version) and
compare: a refactoring that keeps the arithmetic gives identical arrays.

Usage::

    PYTHONPATH=/path/to/old python benchmarks/mbc_golden.py write old.npz
    PYTHONPATH=/path/to/new python benchmarks/mbc_golden.py write new.npz
    python benchmarks/mbc_golden.py compare old.npz new.npz
"""

import sys
import warnings

import numpy as np
import scipy.sparse as sp


def _tasks(seed, sizes=(80, 70, 60), d=6, k=3, positive=False):
    rng = np.random.default_rng(seed)
    base = rng.normal(0, 2.5, size=(k, d))
    out = []
    for t, n in enumerate(sizes):
        y = rng.integers(k, size=n)
        X = base[y] + 0.4 * t + rng.normal(0, 1.0, size=(n, d))
        out.append(np.exp(X / 3.0) if positive else X)
    return out


def _cases():
    dense = _tasks(0)
    pos = _tasks(1, positive=True)
    counts = [sp.random(90, 40, density=0.15, random_state=s, format="csr",
                        data_rvs=lambda m, s=s: np.random.default_rng(s).integers(1, 5, m)
                        .astype(float)) for s in (2, 3)]
    yield "sq_auto", dense, dict(n_clusters=3)
    yield "sq_auto_2tasks_perK", dense[:2], dict(n_clusters=[3, 4])
    yield "sq_lam05", dense, dict(n_clusters=3, lam=0.5)
    yield "sq_empirical", dense[:2], dict(n_clusters=3, lam=0.3, marginals="empirical")
    yield "sq_random_ninit3", dense, dict(n_clusters=3, lam="auto", init="random", n_init=3)
    yield "kl_auto", pos, dict(n_clusters=3, divergence="kl")
    yield "kl_geodesic", pos[:2], dict(n_clusters=3, divergence="kl", lam=0.2,
                                      centroid_solver="geodesic")
    yield "is_lam", pos[:2], dict(n_clusters=2, divergence="itakura_saito", lam=0.1)
    yield "kl_sparse_auto", counts, dict(n_clusters=4, divergence="kl")
    yield "sq_sparse_lam", counts, dict(n_clusters=4, lam=0.2)
    yield "l1_lam", dense[:2], dict(n_clusters=3, divergence="l1_subgradient", lam=0.2)


def write(path):
    from bregclust.mbc import MultitaskBregmanClustering

    out = {}
    for name, Xs, params in _cases():
        for seed in (0, 1):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                est = MultitaskBregmanClustering(random_state=seed, **params).fit(Xs)
            key = f"{name}/s{seed}"
            for t, lab in enumerate(est.labels_):
                out[f"{key}/labels{t}"] = np.asarray(lab)
                out[f"{key}/centers{t}"] = est.cluster_centers_[t]
            for (t, s), W in est.relations_.items():
                out[f"{key}/W{t}{s}"] = W
            out[f"{key}/task_div"] = est.task_divergences_
            out[f"{key}/history"] = est.objective_history_
            out[f"{key}/lam"] = np.array([est.lam_])
            out[f"{key}/ratios"] = np.array(sorted(est.lam_ratios_.items()), dtype=float)
            out[f"{key}/objectives"] = np.array(sorted(est.lam_objectives_.items()), dtype=float)
            out[f"{key}/inertia"] = np.array(est.inertia_)
    np.savez(path, **out)
    print(f"wrote {len(out)} arrays to {path}")


def compare(a, b):
    A, B = np.load(a), np.load(b)
    keys = sorted(set(A.files) | set(B.files))
    same, differ = 0, []
    for k in keys:
        if k not in A.files or k not in B.files:
            differ.append((k, "missing"))
        elif A[k].shape == B[k].shape and np.array_equal(A[k], B[k]):
            same += 1
        else:
            gap = (float(np.max(np.abs(A[k] - B[k]))) if A[k].shape == B[k].shape
                   else f"shape {A[k].shape} vs {B[k].shape}")
            differ.append((k, gap))
    print(f"{same} of {len(keys)} arrays identical")
    for k, gap in differ:
        print(f"  differs: {k}: max abs difference {gap}")
    return not differ


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        sys.exit(0 if compare(sys.argv[2], sys.argv[3]) else 1)
