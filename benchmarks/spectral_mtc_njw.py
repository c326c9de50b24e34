"""Issue 38, session 19: the Ng-Jordan-Weiss rows as a spectral base of SpectralMTC, scored.

Reads ``mtc_compare.py --save`` files (as ``mtc_compare.py --merge`` does) and prints:

1. the table against the issue's three single-task baselines (k-means sq on tf-idf, kl k-means
   on tf, NCut): the baselines of the first file that has them, exactly ``mtc_compare --merge``;
2. the same table against four baselines: those three and ``NJW (cosine 10-NN)`` (k-means on
   the unit rows of NCut's embedding), pooled from every file that ran any of them (the first
   file's score of a baseline is kept);
3. the decision rule written in ``benchmarks/RESULTS.md`` before scoring: on the decision cells
   (``--decision``), each candidate's mean gap to the best of the three baselines against the
   default's (``--default``); a candidate passes when it is more than ``--margin`` above and no
   decision cell's W / T / L mark goes down; the other cells are printed as held out.

The runs themselves are ``mtc_compare.py`` runs (``--methods SpecMTC,SpecMTC-njw,...``,
``--baselines "NJW (cosine 10-NN)"``)::

    python mtc_compare.py --datasets webkb4,tr45,hitech --runs 5 \\
        --methods SpecMTC,SpecMTC-njw,SpecMTC-njw-both,SpecMTC-njw-mu0,SpecMTC-njw-both-mu0 \\
        --baselines "NJW (cosine 10-NN)" --save njw_dec.json
    python spectral_mtc_njw.py bc_export.json kmc_a.json kmc_diag.json kmc_b.json njw_dec.json

``--run DATASETS --save FILE`` first runs ``mtc_compare`` there (all four baselines, the default,
both candidates and the controls; ``--runs``, ``--quick``) and adds ``FILE`` to the files read
(the end-to-end check of ``tests/test_benchmarks.py``)::

    python spectral_mtc_njw.py --run digits --runs 1 --quick --save njw_digits.json
"""

import argparse
import json

import numpy as np
from mtc_compare import BASELINES, TIE, _mark, merge, summary
from mtc_compare import main as mtc_compare_main

#: The issue's three single-task baselines (the headline's); the fourth is the NJW row.
THREE = ("k-means sq (tf-idf)", "k-means kl (tf)", "NCut (cosine 10-NN)")
NJW = "NJW (cosine 10-NN)"
ORDER = {"W": 2, "T": 1, "L": 0}


def pooled_baselines(files):
    """``{(data, task): {baseline: mean NMI}}`` over every file (the first file's score of a
    baseline kept)."""
    out = {}
    for f in files:
        with open(f) as fh:
            saved = json.load(fh)
        for c in saved["cells"]:
            b = out.setdefault((c["data"], c["task"]), {})
            for name, v in c.get("baselines", {}).items():
                b.setdefault(name, v)
    return out


def rebase(cells, pooled, names):
    """Copies of ``cells`` whose best baseline is the best of ``names`` (cells missing one of
    them are left out, with a message)."""
    out = []
    for c in cells:
        b = pooled.get((c["data"], c["task"]), {})
        if not all(n in b for n in names):
            print(f"  {c['data']}/{c['task']}: baselines {', '.join(n for n in names if n not in b)}"
                  " not run; left out of this table")
            continue
        best_b = max(names, key=lambda n: b[n])
        d = dict(c, best=float(b[best_b]), best_b=best_b, baselines={n: b[n] for n in names})
        d["marks"] = {m: _mark(v, d["best"]) for m, v in c["mt"].items()}
        out.append(d)
    return out


def decide(cells, default, candidates, decision, margin):
    """The decision rule on ``cells`` (three baselines); prints it and returns the winner."""
    dec = [c for c in cells if c["data"] in decision]
    held = [c for c in cells if c["data"] not in decision]
    print(f"\n## Decision rule: decision cells {', '.join(decision)} ({len(dec)} cells); a "
          f"candidate must beat {default}'s mean gap by more than {margin} with no mark going "
          "down\n")
    print("| method | decision: mean gap | vs default | marks down | marks up | passes | "
          "held out: cells | held out: mean gap | held out vs default |")
    print("|---|---|---|---|---|---|---|---|---|")

    def gaps(cs, m):
        run = [c["mt"][m] - c["best"] for c in cs if m in c["mt"]]
        return (float(np.mean(run)) if run else float("nan")), len(run)

    g0, _ = gaps(dec, default)
    h0, _ = gaps(held, default)
    winner, best = None, -np.inf
    for m in [default] + list(candidates):
        if any(m not in c["mt"] for c in dec):
            print(f"| {m} | not run on every decision cell | | | | | | | |")
            continue
        g, _ = gaps(dec, m)
        down = sum(ORDER[c["marks"][m]] < ORDER[c["marks"][default]] for c in dec)
        up = sum(ORDER[c["marks"][m]] > ORDER[c["marks"][default]] for c in dec)
        ok = m != default and g - g0 > margin and down == 0
        h, nh = gaps(held, m)
        print(f"| {m} | {g:+.4f} | {g - g0:+.4f} | {down} | {up} | "
              f"{'-' if m == default else ('yes' if ok else 'no')} | {nh} | {h:+.4f} | "
              f"{h - h0:+.4f} |")
        if ok and g > best:
            winner, best = m, g
    print(f"\nVerdict: {'the default becomes ' + winner if winner else 'the default stays'} "
          f"({default} is today's default).")
    for c in dec:
        print(f"  {c['data']}/{c['task']}: best {c['best']:.3f} ({c['best_b']}); "
              + ", ".join(f"{m} {c['mt'][m]:.3f} {c['marks'][m]}" for m in
                          [default] + list(candidates) if m in c["mt"]))
    return winner


def cost(datasets, repeats, seed=0):
    """CPU seconds (best of ``repeats``, one process) of one fit of the default and of each
    candidate, and of the per-task NCut and NJW baselines, on each data set (seed ``seed``)."""
    import time
    import warnings

    from mtc_compare import fit_baseline, load, representations

    from bregclust.spectral_mtc import SpectralMTC

    print(f"\n## Cost: CPU seconds of one fit (best of {repeats}, seed {seed}; "
          "time.process_time)\n")
    print("| data | NCut per task | NJW per task | SpectralMTC() | spectral_rows='unit' | "
          "spectral_rows='both' | unit / default | both / default |")
    print("|---|---|---|---|---|---|---|---|")
    for name in datasets:
        Xs, ys, _, is_text = load(name)
        Xs = representations(Xs, is_text)["tfidf"]
        ks = [int(np.unique(y).size) for y in ys]
        fits = {"ncut": lambda: [fit_baseline("NCut (cosine 10-NN)", X, k, seed)
                                 for X, k in zip(Xs, ks)],
                "njw": lambda: [fit_baseline(NJW, X, k, seed) for X, k in zip(Xs, ks)]}
        for rows in ("scaled", "unit", "both"):
            fits[rows] = (lambda r=rows: SpectralMTC(ks, spectral_rows=r, random_state=seed)
                          .fit(Xs))
        best = {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for _ in range(repeats):
                for key, f in fits.items():
                    t0 = time.process_time()
                    f()
                    best[key] = min(best.get(key, np.inf), time.process_time() - t0)
        print(f"| {name} | {best['ncut']:.2f} | {best['njw']:.2f} | {best['scaled']:.2f} | "
              f"{best['unit']:.2f} | {best['both']:.2f} | {best['unit'] / best['scaled']:.2f} | "
              f"{best['both'] / best['scaled']:.2f} |")


def modularity_check(datasets, runs):
    """Per data set: on how many task-seeds ``spectral_rows="both"`` keeps the unit rows, and
    whether the larger modularity went with the larger NMI (a diagnostic of the rule)."""
    import warnings

    from mtc_compare import load, representations
    from sklearn.preprocessing import normalize

    from bregclust.metrics import nmi
    from bregclust.spectral_mtc import SpectralMTC, normalized_cut, within_cluster_unit

    print(f"\n## spectral_rows='both' at coupling 0 (seeds 0..{runs - 1}): which rows each "
          "task-seed keeps, and whether modularity picked the larger NMI\n")
    print("| data | task-seeds | unit kept | unit NMI > scaled NMI | modularity picked the "
          "larger NMI | mean NMI scaled | mean NMI unit | diagnostic: smaller NCut picked it | "
          "diagnostic: smaller unit-row k-means SS picked it |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in datasets:
        Xs, ys, _, is_text = load(name)
        Xs = representations(Xs, is_text)["tfidf"]
        ks = [int(np.unique(y).size) for y in ys]
        kept = better = right = n = by_cut = by_ss = 0
        s_nmi, u_nmi = [], []
        for seed in range(runs):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                fits = {r: SpectralMTC(ks, base="spectral", coupling=0.0, spectral_rows=r,
                                       random_state=seed).fit(Xs)
                        for r in ("scaled", "unit", "both")}
            for t, y in enumerate(ys):
                a, b = nmi(y, fits["scaled"].labels_[t]), nmi(y, fits["unit"].labels_[t])
                u = fits["both"].spectral_rows_[t] == "unit"
                n += 1
                kept += u
                better += b > a
                right += (b >= a) if u else (a >= b)
                # two other label-free criteria, as diagnostics (not rules): which partition
                # they prefer, and whether that is the one of larger NMI
                W = fits["both"].affinity_matrices_[t]
                cut = [normalized_cut(W, fits[r].labels_[t]) for r in ("scaled", "unit")]
                U = normalize(Xs[t])
                ss = [within_cluster_unit(U, fits[r].labels_[t]) for r in ("scaled", "unit")]
                by_cut += (b >= a) if cut[1] < cut[0] else (a >= b)
                by_ss += (b >= a) if ss[1] < ss[0] else (a >= b)
                s_nmi.append(a)
                u_nmi.append(b)
        print(f"| {name} | {n} | {kept} | {better} | {right} | {np.mean(s_nmi):.3f} | "
              f"{np.mean(u_nmi):.3f} | {by_cut} | {by_ss} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="*", help="mtc_compare --save files, baselines first")
    p.add_argument("--run", metavar="DATASETS",
                   help="first run mtc_compare on these data sets (comma-separated) into --save")
    p.add_argument("--save", metavar="FILE", help="with --run: where mtc_compare saves")
    p.add_argument("--runs", type=int, default=5, help="with --run: seeds 0..runs-1")
    p.add_argument("--quick", action="store_true", help="with --run: mtc_compare --quick")
    p.add_argument("--methods", default="SpecMTC,SpecMTC-njw,SpecMTC-njw-both,SpecMTC-mu0,"
                   "SpecMTC-njw-mu0,SpecMTC-njw-both-mu0", help="columns to show")
    p.add_argument("--default", default="SpecMTC")
    p.add_argument("--candidates", default="SpecMTC-njw,SpecMTC-njw-both")
    p.add_argument("--decision", default="webkb4,tr45,hitech")
    p.add_argument("--margin", type=float, default=0.005)
    p.add_argument("--cost", metavar="DATASETS",
                   help="only time one fit of the default and the candidates on these data sets")
    p.add_argument("--repeats", type=int, default=2, help="with --cost: best of this many")
    p.add_argument("--modularity", metavar="DATASETS",
                   help="only the diagnostic of spectral_rows='both' (--runs seeds)")
    args = p.parse_args(argv)
    if args.modularity:
        modularity_check([d for d in args.modularity.split(",") if d], args.runs)
        return
    if args.cost:
        cost([d for d in args.cost.split(",") if d], args.repeats)
        return
    if args.run:
        if not args.save:
            p.error("--run needs --save FILE")
        mtc_compare_main(["--datasets", args.run, "--runs", str(args.runs), "--methods",
                          args.methods, "--baselines", ",".join(BASELINES), "--save",
                          args.save] + (["--quick"] if args.quick else []))
        args.files = list(args.files) + [args.save]
    if not args.files:
        p.error("give mtc_compare --save files, or --run DATASETS --save FILE")
    cells, methods = merge(args.files)
    shown = [m for m in args.methods.split(",") if m in methods]
    for c in cells:
        c["mt"] = {m: v for m, v in c["mt"].items() if m in shown}
    pooled = pooled_baselines(args.files)
    three = rebase(cells, pooled, THREE)
    print(f"# Against the issue's three baselines ({', '.join(THREE)}); W / T / L by more than "
          f"{TIE} NMI")
    summary(three, shown)
    decide(three, args.default, [m for m in args.candidates.split(",") if m],
           [d for d in args.decision.split(",") if d], args.margin)
    four = rebase(cells, pooled, THREE + (NJW,))
    print(f"\n# Against four baselines (the three and {NJW}); not used to decide")
    summary(four, shown)


if __name__ == "__main__":
    main()
