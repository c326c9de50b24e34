"""MTCMRL / SNMF solver speed: the default ``algorithm="lbfgs"`` against the damped
multiplicative update (``algorithm="damped"``, the previous default) in the same run.

Both start from the same point (the estimator's k-means start, ``Y = onehot + 0.2``, ``W = 1``)
and stop on the same rule (a sweep lowers J by at most ``tol * |J|``, default ``tol=1e-7``).
Printed per solver: wall time (best of ``--repeats`` for ours; the peer runs ``--peer-repeats``
times, default once, since it takes minutes), sweeps, whether the rule was met before
``max_iter``, final J, the largest projected-gradient entry of J in ``Y`` (a KKT residual,
with ``W`` at its optimum for that ``Y``; 0 at a stationary point), and NMI per task. Then
the time ratio peer / ours, and two cross-checks: the damped update started from our end point
(how far it still moves J, and whether labels change) and ours started from the peer's end point
(where it ends, and how its labels agree with ours: adjusted Rand index per task).

Data: ``--data digits`` (default) is ``bregclust.datasets.make_digits_tasks()``, scikit-learn's
bundled 8x8 digits, tasks digits 0-5 (811 images) and 3-9 (986 images), no download;
``--data reuters`` is the MTCMRL paper's Reuters tasks from Deng Cai's Reuters21578.mat
(``load_mtcmrl_tasks("reuters", source="cai")``, needs ``BREGCLUST_DATA``). The estimator's
defaults otherwise (lam = alpha = 4, mu = beta = 0.5, cosine similarity).

``--peer-max-iter`` (default: the estimator's ``max_iter``, 3000) caps the peer's sweeps; a
large value (e.g. 200000) runs it to its own stopping rule.

Usage::

    python benchmarks/mtcmrl_solver_speed.py                          # digits, MTCMRL and SNMF
    python benchmarks/mtcmrl_solver_speed.py --peer-max-iter 200000   # the peer to its tol
    python benchmarks/mtcmrl_solver_speed.py --data reuters
"""

import argparse
import pathlib
import sys
import time
import warnings

import numpy as np
from sklearn.metrics import adjusted_rand_score

REPO = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from _common import machine  # noqa: E402

import bregclust.model_relation as mr  # noqa: E402
from bregclust._multitask import parse_init  # noqa: E402
from bregclust.metrics import nmi  # noqa: E402


def load(name):
    if name == "digits":
        from bregclust.datasets import make_digits_tasks

        d = make_digits_tasks()
        return d.Xs, d.ys, d.description
    from bregclust.datasets import load_mtcmrl_tasks

    d = load_mtcmrl_tasks("reuters", source="cai")
    return list(d.Xs), list(d.ys), d.description


def kkt(Xs, Ms, factors, res, lam, mu, alpha):
    """Largest projected-gradient entry of min_W J in Y, over the tasks."""
    worst = 0.0
    for t, (X, M, Y) in enumerate(zip(Xs, Ms, res["Ys"])):
        b, C0 = mr._relation_terms(t, res["Ws"], res["Gs"], mu, alpha, Y.shape[1], X.shape[1])
        rows = mr._RowSpace(X, factors[t]) if lam > 0 else None
        g = mr._reduced_y_objective(X, M, rows, b, C0, lam)(Y.ravel())[1].reshape(Y.shape)
        pg = np.where(Y > 0, g, np.minimum(g, 0.0))
        worst = max(worst, float(np.abs(pg).max()))
    return worst


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", choices=["digits", "reuters"], default="digits")
    p.add_argument("--repeats", type=int, default=3, help="runs of ours (best time kept)")
    p.add_argument("--peer-repeats", type=int, default=1, help="runs of the damped update")
    p.add_argument("--peer-max-iter", type=int, default=None,
                   help="max sweeps of the damped update (default: the estimator's max_iter)")
    p.add_argument("--tol", type=float, default=None, help="default: the estimator's")
    p.add_argument("--seed", type=int, default=0, help="random_state of the k-means start")
    p.add_argument("--skip-snmf", action="store_true", help="MTCMRL only")
    args = p.parse_args(argv)
    from threadpoolctl import threadpool_limits

    threadpool_limits(1)
    defaults = mr.ModelRelationClustering().get_params()
    tol = defaults["tol"] if args.tol is None else args.tol
    peer_max = defaults["max_iter"] if args.peer_max_iter is None else args.peer_max_iter
    lam, mu, alpha, beta = (defaults[k] for k in ("lam", "mu", "alpha", "beta"))
    Xs, ys, desc = load(args.data)
    hs = [int(np.unique(y).size) for y in ys]
    print(f"# {machine()}; 1 BLAS thread")
    print(f"# command: python benchmarks/mtcmrl_solver_speed.py {' '.join(sys.argv[1:])}")
    print(f"# data: {desc}")
    print(f"# tasks {[X.shape for X in Xs]}, clusters {hs}; lam={lam}, mu={mu}, alpha={alpha}, "
          f"beta={beta}, tol={tol:g}; ours max_iter={defaults['max_iter']}, damped "
          f"max_iter={peer_max}")
    Ms, factors = mr._prepare(Xs, "cosine", None, True)
    parsed = parse_init("k-means++", Xs, hs, membership=True)
    Y0 = mr._initial_indicators(Xs, hs, parsed, args.seed)

    def fit(Y, W, algorithm, max_iter, X_=Xs, M_=Ms, F_=factors, lm=lam, m=mu, a=alpha, b=beta):
        return mr._fit_loop(X_, M_, F_, Y, W, lm, m, a, b, max_iter, tol, algorithm=algorithm)

    def timed(fn, repeats):
        best, out = np.inf, None
        for _ in range(repeats):
            t0 = time.perf_counter()
            out = fn()
            best = min(best, time.perf_counter() - t0)
        return best, out

    def report(name, sec, res, Xl, Ml, Fl, yl, lm, m, a):
        J = res["history"]
        inner = f", {int(res['inner'].sum())} L-BFGS-B iterations" if res["inner"].size else ""
        print(f"{name:34s} {sec:9.2f} s  {res['n_iter']:6d} sweeps{inner:30s} "
              f"converged={res['converged']!s:5s}  J={J[-1]:.8g}  KKT={kkt(Xl, Ml, Fl, res, lm, m, a):.2e}"
              f"  NMI {' / '.join(f'{nmi(y, Y.argmax(1)):.3f}' for y, Y in zip(yl, res['Ys']))}")

    W0 = [np.ones((X.shape[1], h)) for X, h in zip(Xs, hs)]
    print("\n## MTCMRL (ModelRelationClustering defaults)")
    t_new, new = timed(lambda: fit(Y0, W0, "lbfgs", defaults["max_iter"]), args.repeats)
    report("ours  algorithm='lbfgs'", t_new, new, Xs, Ms, factors, ys, lam, mu, alpha)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t_old, old = timed(lambda: fit(Y0, W0, "damped", peer_max), args.peer_repeats)
    report("peer  algorithm='damped'", t_old, old, Xs, Ms, factors, ys, lam, mu, alpha)
    print(f"# time ratio damped / lbfgs: {t_old / t_new:.1f}x; J(lbfgs) - J(damped) = "
          f"{new['history'][-1] - old['history'][-1]:+.6g}")
    back = fit(new["Ys"], new["Ws"], "damped", peer_max)
    same = all(np.array_equal(a.argmax(1), b.argmax(1)) for a, b in zip(back["Ys"], new["Ys"]))
    Jb = back["history"]
    print(f"# damped update from our end point: {back['n_iter']} sweep(s), J {Jb[0]:.10g} -> "
          f"{Jb[-1]:.10g} (relative {(Jb[0] - Jb[-1]) / Jb[0]:.1e}), labels unchanged: {same}")
    fwd = fit(old["Ys"], old["Ws"], "lbfgs", defaults["max_iter"])
    Jf = fwd["history"]
    agree = " / ".join(f"{adjusted_rand_score(a.argmax(1), b.argmax(1)):.3f}"
                       for a, b in zip(fwd["Ys"], new["Ys"]))
    print(f"# lbfgs from the damped end point: {fwd['n_iter']} sweep(s), J {Jf[0]:.10g} -> "
          f"{Jf[-1]:.10g} (relative {(Jf[0] - Jf[-1]) / Jf[0]:.1e}); ARI of its labels with "
          f"ours {agree}")
    if args.skip_snmf:
        return
    print("\n## SNMF (SymmetricNMF defaults), task by task")
    for t in range(len(Xs)):
        X, M, y, h = Xs[t], Ms[t], ys[t], hs[t]
        Wz = [np.zeros((X.shape[1], h))]
        args_t = dict(X_=[X], M_=[M], F_=[None], lm=0.0, m=1.0, a=0.0, b=0.0)
        t_new, new = timed(lambda: fit([Y0[t]], Wz, "lbfgs", defaults["max_iter"], **args_t),
                           args.repeats)
        report(f"task {t} ours  algorithm='lbfgs'", t_new, new, [X], [M], [None], [y], 0.0,
               1.0, 0.0)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t_old, old = timed(lambda: fit([Y0[t]], Wz, "damped", peer_max, **args_t),
                               args.peer_repeats)
        report(f"task {t} peer  algorithm='damped'", t_old, old, [X], [M], [None], [y], 0.0,
               1.0, 0.0)
        print(f"# time ratio damped / lbfgs: {t_old / t_new:.1f}x; J(lbfgs) - J(damped) = "
              f"{new['history'][-1] - old['history'][-1]:+.6g}")


if __name__ == "__main__":
    main()
