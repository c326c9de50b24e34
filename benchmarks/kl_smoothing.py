"""kl k-means on term frequencies: smoothing="auto" beside the fixed pseudo-counts 1, 10, 100, 1000.

Issue: on sparse text one pseudo-sample of smoothing is far too weak. This script prints, per data
set, the mean NMI (over seeds) of BregmanKMeans(K, divergence="kl") on L1-normalised term counts
for each fixed smoothing and for "auto" (:func:`bregclust.kmeans.auto_smoothing`), the value
"auto" chose, and whether "auto" is within 0.02 NMI of the best fixed value.

Data: the six CLUTO document sets (raw counts, ``classid`` labels, empty rows dropped) and
20 Newsgroups (bydate, all 18,846 documents, counts of terms in >= 2 documents), K = number of
classes, one k-means++ start per seed (the same seeds for every smoothing).

With ``--block B`` it also applies the 5-seed criterion to every run of B consecutive seeds
(disjoint blocks): for each column (each fixed pseudo-count taken as a rule, and "auto") it counts
the blocks in which that column is within 0.02 NMI of the best fixed value of the same block, and
the chance (product over data sets of the pass rates) that one draw of B seeds passes on every
set. It measures how often a rule that is as good as the best on average still misses the
criterion through seed noise alone. ``--save`` keeps the per-seed NMIs; ``--merge`` combines saved runs
(e.g. seeds 0-9 and 10-19 run in two processes) and prints the tables without fitting.

    python benchmarks/kl_smoothing.py                      # all seven sets, 5 seeds
    python benchmarks/kl_smoothing.py --datasets tr11 tr23 --seeds 20 --block 5
    python benchmarks/kl_smoothing.py --datasets 20ng --seeds 10 --seed-start 10 --save b.json
    python benchmarks/kl_smoothing.py --merge a.json b.json --block 5
"""

import argparse
import json
import time

import numpy as np
from sklearn.preprocessing import normalize

from bregclust import BregmanKMeans
from bregclust.datasets import CLUTO_NAMES, load_20newsgroups, load_cluto
from bregclust.metrics import nmi

FIXED = (1.0, 10.0, 100.0, 1000.0)
COLUMNS = [f"{b:g}" for b in FIXED] + ["auto"]
TOL = 0.02


def load(name):
    d = load_20newsgroups(vectorizer="count", min_df=2) if name == "20ng" else load_cluto(name)
    keep = np.asarray(d.X.sum(axis=1)).ravel() > 0
    return normalize(d.X[keep], norm="l1"), np.asarray(d.y)[keep]


def score(X, y, k, smoothing, seeds):
    """Per-seed NMIs of one smoothing, and the pseudo-count the fit used."""
    out = []
    for seed in seeds:
        km = BregmanKMeans(k, divergence="kl", smoothing=smoothing, n_init=1,
                           random_state=seed).fit(X)
        out.append(nmi(y, km.labels_))
    return out, float(km.smoothing_)


def run(name, seeds):
    """One data set: {"n", "K", "beta", "seeds", "nmi": {column: [per seed]}, "seconds"}."""
    t0 = time.perf_counter()
    X, y = load(name)
    k = int(np.unique(y).size)
    rec = {"n": int(X.shape[0]), "K": k, "seeds": list(seeds), "nmi": {}}
    for col, b in zip(COLUMNS, [*FIXED, "auto"]):
        rec["nmi"][col], beta = score(X, y, k, b, seeds)
    rec["beta"] = beta
    rec["seconds"] = time.perf_counter() - t0
    return rec


def merge(records):
    """Combine the runs of one data set over disjoint seeds (ordered by seed)."""
    first = records[0]
    seeds = [s for r in records for s in r["seeds"]]
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"merge: seeds {sorted(seeds)} repeat across the saved files; pass "
                         "files with disjoint seeds.")
    order = np.argsort(seeds)
    nmis = {c: list(np.asarray([v for r in records for v in r["nmi"][c]])[order])
            for c in COLUMNS}
    return {"n": first["n"], "K": first["K"], "beta": first["beta"],
            "seeds": [seeds[i] for i in order], "nmi": nmis,
            "seconds": sum(r["seconds"] for r in records)}


def block_passes(rec, block):
    """For each column, the number of disjoint ``block``-seed blocks where it is within TOL of
    that block's best fixed column, and the number of blocks."""
    m = np.array([rec["nmi"][c] for c in COLUMNS])            # columns x seeds
    nb = m.shape[1] // block
    means = m[:, :nb * block].reshape(len(COLUMNS), nb, block).mean(axis=2)
    best = means[:len(FIXED)].max(axis=0)
    return (best - means <= TOL).sum(axis=1), nb


def print_tables(results, block):
    n_seeds = sorted({len(r["seeds"]) for r in results.values()})
    print(f"kl k-means on L1-normalised term counts, mean NMI over {'/'.join(map(str, n_seeds))}"
          " seeds")
    print(f"{'data':<8} {'n':>6} {'K':>3} | " + " ".join(f"{c:>6}" for c in COLUMNS[:-1])
          + f" | {'auto':>6} {'beta':>8} | best-auto  ok")
    n_ok = 0
    for name, r in results.items():
        means = [float(np.mean(r["nmi"][c])) for c in COLUMNS]
        gap = max(means[:-1]) - means[-1]
        ok = gap <= TOL
        n_ok += ok
        print(f"{name:<8} {r['n']:>6} {r['K']:>3} | " + " ".join(f"{v:6.3f}" for v in means[:-1])
              + f" | {means[-1]:6.3f} {r['beta']:8.1f} | {gap:+9.3f} {'yes' if ok else 'NO':>3}"
              f"   ({r['seconds']:.0f} s)")
    print(f"auto within {TOL} NMI of the best fixed smoothing on {n_ok} of {len(results)} "
          "data sets")
    if not block:
        return
    print(f"\nThe criterion on disjoint blocks of {block} seeds: blocks where the column is within "
          f"{TOL} NMI of the block's best fixed smoothing")
    print(f"{'data':<8} {'blocks':>6} | " + " ".join(f"{c:>6}" for c in COLUMNS))
    total, all_blocks, p_all = np.zeros(len(COLUMNS), int), 0, np.ones(len(COLUMNS))
    for name, r in results.items():
        passes, nb = block_passes(r, block)
        if nb == 0:
            continue
        total += passes
        all_blocks += nb
        p_all *= passes / nb
        print(f"{name:<8} {nb:>6} | " + " ".join(f"{p:>6d}" for p in passes))
    print(f"{'all':<8} {all_blocks:>6} | " + " ".join(f"{p:>6d}" for p in total))
    # the data sets are independent draws, so the chance that one draw of `block` seeds per
    # set passes on every set is the product of the per-set pass rates
    print(f"{'P(every)':<8} {'':>6} | " + " ".join(f"{p:6.2f}" for p in p_all)
          + f"   (chance that one {block}-seed draw passes on every data set)")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--datasets", nargs="+", default=[*sorted(CLUTO_NAMES), "20ng"])
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--seed-start", type=int, default=0, help="first seed (default 0)")
    p.add_argument("--block", type=int, default=0,
                   help="also apply the criterion to disjoint blocks of this many seeds")
    p.add_argument("--save", help="write the per-seed NMIs to this JSON file")
    p.add_argument("--merge", nargs="+", metavar="JSON",
                   help="print the tables of saved runs (seeds combined per data set); no fits")
    args = p.parse_args(argv)
    if args.block < 0:
        p.error("--block must be >= 0")
    if args.merge:
        saved = {}
        for path in args.merge:
            with open(path) as fh:
                for name, rec in json.load(fh).items():
                    saved.setdefault(name, []).append(rec)
        results = {name: merge(recs) for name, recs in saved.items()}
    else:
        seeds = range(args.seed_start, args.seed_start + args.seeds)
        results = {}
        for name in args.datasets:
            results[name] = run(name, seeds)
            print(f"{name}: {results[name]['seconds']:.0f} s", flush=True)
            if args.save:
                with open(args.save, "w") as fh:
                    json.dump(results, fh)
    print_tables(results, args.block)


if __name__ == "__main__":
    main()
