"""MTCMRL relation step: exact simplex projection vs cvxpy QP vs Frank-Wolfe (paper Fig. 3).

The relation sub-problem ``min_G <A, G> + beta ||G||^2`` over the probability simplex
(``A_ij = ||W^t_i - W^s_j||^2``, ``h x h`` clusters) is solved by

* ``exact``   - bregclust's sort-based Euclidean projection of ``-A / (2 beta)`` onto the simplex;
* ``qp``      - the paper's quadratic programme (Eq. 5) through cvxpy + Clarabel (tight
  tolerances), timed as a full call (build + canonicalise + solve) and as solver time only;
* ``fw``      - Frank-Wolfe with exact line search, the paper's large-h option, stopped at a
  duality gap of ``--fw-gap`` (or ``--fw-max-iter`` iterations);
* ``pfw``     - pairwise Frank-Wolfe (linear rate on the simplex), same stopping rule.

``A`` comes from 20 Newsgroups tasks 1 and 2 of the MTCMRL paper (bydate test split, tf-idf,
3,000 terms), as in the paper's Sec. 4.8: for each ``h``, ``Y^t`` = one-hot k-means labels + 0.2
(``h`` clusters per task) and ``W^t`` = the model's W step with ``alpha = 0`` (ridge regression
of ``Y^t`` on ``X^t``, lam = 4, mu = 0.5). ``--synthetic`` uses Gaussian ``W`` instead (no data).

Target (issue 7): the exact step >= 100x faster than the QP at h = 35, with the same objective.

Usage::

    python benchmarks/mtcmrl_relation_speed.py                 # h = 5, 15, ..., 95
    python benchmarks/mtcmrl_relation_speed.py --h 5 35 --repeats 3 --synthetic
"""

import argparse
import pathlib
import platform
import sys
import time
import warnings

import numpy as np

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from naive_model_relation import (  # noqa: E402  (cvxpy lives there, in one place)
    relation_frank_wolfe,
    relation_objective,
    relation_qp_cvxpy,
)

import bregclust.model_relation as mr  # noqa: E402


def _best_time(fn, repeats):
    best, out = np.inf, None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def _real_costs(hs, seed, lam=4.0, mu=0.5):
    from bregclust.datasets import load_20newsgroups
    from bregclust.kmeans import BregmanKMeans

    tasks = (("comp.graphics", "rec.autos", "sci.crypt"),
             ("comp.os.ms-windows.misc", "rec.motorcycles", "sci.electronics",
              "talk.politics.mideast"))
    data = load_20newsgroups(categories=[c for t in tasks for c in t], subset="test",
                             vectorizer="tfidf", max_features=3000)
    names = np.asarray(data.target_names)[data.y]
    Xs = [data.X[np.isin(names, t)] for t in tasks]
    factors = [mr._TaskFactor(X) for X in Xs]
    costs = {}
    for h in hs:
        Ws = []
        for t, X in enumerate(Xs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lab = BregmanKMeans(h, n_init=1, random_state=seed + t).fit(X).labels_
            Y = np.full((X.shape[0], h), 0.2)
            Y[np.arange(X.shape[0]), lab] += 1.0
            Ws.append(mr._w_step(t, X, Y, [None, None], {}, factors[t], lam, mu, 0.0))
        costs[h] = mr._relation_cost(Ws[0], Ws[1])
    desc = (f"20 Newsgroups bydate test, MTCMRL tasks 1-2 ({Xs[0].shape[0]} and "
            f"{Xs[1].shape[0]} docs, tf-idf, {Xs[0].shape[1]} terms); W = ridge regression "
            f"(lam={lam}, mu={mu}) of k-means indicators + 0.2")
    return costs, desc


def _synthetic_costs(hs, seed, d=3000):
    rng = np.random.RandomState(seed)
    costs = {h: mr._relation_cost(rng.randn(d, h) * 0.05, rng.randn(d, h) * 0.05) for h in hs}
    return costs, f"synthetic Gaussian W (d={d}, entries N(0, 0.05^2))"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--h", type=int, nargs="+", default=list(range(5, 96, 10)),
                   help="clusters per task (the paper's Fig. 3 grid by default)")
    p.add_argument("--beta", type=float, default=0.5)
    p.add_argument("--repeats", type=int, default=3, help="best-of repeats per timing")
    p.add_argument("--qp-max-h", type=int, default=95, help="skip the QP above this h")
    p.add_argument("--fw-gap", type=float, default=1e-8, help="Frank-Wolfe duality-gap stop")
    p.add_argument("--fw-max-iter", type=int, default=20000)
    p.add_argument("--synthetic", action="store_true", help="Gaussian W, no data needed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=1,
                   help="BLAS threads (threadpoolctl); 1 avoids oversubscription on shared hosts")
    args = p.parse_args(argv)

    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)
    import cvxpy

    if args.synthetic:
        costs, desc = _synthetic_costs(args.h, args.seed)
    else:
        try:
            costs, desc = _real_costs(args.h, args.seed)
        except FileNotFoundError as exc:
            print(f"# real data unavailable ({exc}); using synthetic W", file=sys.stderr)
            costs, desc = _synthetic_costs(args.h, args.seed)

    # warm-up (imports, first cvxpy canonicalisation)
    A0 = costs[args.h[0]]
    t0 = time.perf_counter()
    relation_qp_cvxpy(A0, args.beta)
    t_first_qp = time.perf_counter() - t0
    mr._relation_step(A0, args.beta)

    print("# MTCMRL relation step: exact simplex projection vs cvxpy QP vs Frank-Wolfe")
    print(f"# data: {desc}")
    print(f"# beta={args.beta}, best of {args.repeats}; cvxpy {cvxpy.__version__} + CLARABEL "
          f"(tol 1e-12); FW stop: gap <= {args.fw_gap:g} or {args.fw_max_iter} iterations; "
          f"BLAS threads {args.threads}; python {platform.python_version()}, numpy "
          f"{np.__version__}; first cvxpy call (warm-up) {t_first_qp:.3f} s")
    print("# times in ms; dJ = objective - exact objective (>= 0 up to rounding); "
          "nnz = non-zeros of the exact G")
    head = (f"{'h':>3} {'h*h':>5} {'nnz':>5} {'exact':>8} {'qp call':>9} {'qp solve':>9} "
            f"{'qp/exact':>9} {'dJ qp':>9} {'maxdG qp':>9} {'fw':>9} {'fw it':>6} "
            f"{'dJ fw':>9} {'pfw':>8} {'pfw it':>6} {'dJ pfw':>9}")
    print(head)
    for h in args.h:
        A = costs[h]
        t_ex, G = _best_time(lambda A=A: mr._relation_step(A, args.beta), max(args.repeats, 20))
        f_ex = relation_objective(A, G, args.beta)
        assert G.min() >= 0 and abs(G.sum() - 1) < 1e-12
        if h <= args.qp_max_h:
            t_qp, (G_qp, status, t_solve) = _best_time(
                lambda A=A: relation_qp_cvxpy(A, args.beta), args.repeats)
            dj_qp = relation_objective(A, G_qp, args.beta) - f_ex
            dg_qp = float(np.abs(G_qp - G).max())
            qp_cols = (f"{t_qp * 1e3:9.1f} {t_solve * 1e3:9.1f} {t_qp / t_ex:9.0f} "
                       f"{dj_qp:9.1e} {dg_qp:9.1e}")
            if status != "optimal":
                qp_cols += f" ({status})"
        else:
            qp_cols = f"{'-':>9} {'-':>9} {'-':>9} {'-':>9} {'-':>9}"
        t_fw, (G_fw, it_fw, _) = _best_time(
            lambda A=A: relation_frank_wolfe(A, args.beta, gap_tol=args.fw_gap,
                                             max_iter=args.fw_max_iter), 1)
        t_pfw, (G_pfw, it_pfw, _) = _best_time(
            lambda A=A: relation_frank_wolfe(A, args.beta, gap_tol=args.fw_gap,
                                             max_iter=args.fw_max_iter, variant="pairwise"), 1)
        print(f"{h:3d} {h * h:5d} {np.count_nonzero(G):5d} {t_ex * 1e3:8.3f} {qp_cols} "
              f"{t_fw * 1e3:9.1f} {it_fw:6d} {relation_objective(A, G_fw, args.beta) - f_ex:9.1e} "
              f"{t_pfw * 1e3:8.1f} {it_pfw:6d} "
              f"{relation_objective(A, G_pfw, args.beta) - f_ex:9.1e}")


if __name__ == "__main__":
    main()
