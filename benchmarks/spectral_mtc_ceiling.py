"""Issue 38: how far a choice among the measured SpectralMTC variants can go, with labels.

Reads ``mtc_compare.py --save`` files (as ``mtc_compare.py --merge`` does: later files replace a
method's earlier score on a cell) and scores, against the best of the issue's three single-task
baselines (k-means sq on tf-idf, kl k-means on tf, NCut; pooled from every file, the first
file's score kept), each cell's W / T / L by more than ``TIE`` NMI and each data set's mean gap:

1. every variant run on all cells, as it is (a fixed default);
2. a choice made **with the labels**: per data set between two variants (the best pair), per
   data set among all variants, per cell among the coupled variants, per cell among the
   coupling-0 controls (``-mu0``), per cell among all.

The label-using choices are ceilings for any label-free rule that chooses among the same variants
(a rule that reads no labels cannot choose better than the labels do); the per-cell maximum over
many variants is also biased upwards (the largest of several noisy means). The issue's bar is
``>= 14`` wins with no data set's mean below ``-0.02``. ::

    python spectral_mtc_ceiling.py ng20_5s.json bc_export.json kmc_a.json ... tf38_counts.json
"""

import argparse
import itertools

import numpy as np
from mtc_compare import TIE, merge
from spectral_mtc_njw import THREE, pooled_baselines, rebase

BAR_WINS, BAR_SET = 14, -0.02


def score(cells, pick):
    """``(wins, ties, losses, worst data-set mean gap, worst data set)`` of the NMI ``pick(c)``
    (``None``: the cell is skipped) against each cell's best baseline."""
    gaps, marks = {}, [0, 0, 0]
    for c in cells:
        v = pick(c)
        if v is None:
            continue
        g = v - c["best"]
        gaps.setdefault(c["data"], []).append(g)
        marks[0 if g > TIE else (2 if g < -TIE else 1)] += 1
    means = {d: float(np.mean(g)) for d, g in gaps.items()}
    worst = min(means, key=means.get)
    return (*marks, means[worst], worst)


def per_set(cells, variants):
    """The variant with the largest mean NMI on each data set (labels used), among ``variants``
    run on all of that set's cells."""
    out = {}
    for d in sorted({c["data"] for c in cells}):
        cs = [c for c in cells if c["data"] == d]
        ran = [m for m in variants if all(m in c["mt"] for c in cs)]
        if ran:
            out[d] = max(ran, key=lambda m: np.mean([c["mt"][m] for c in cs]))
    return out


def best_in_cell(variants):
    def pick(c):
        ran = [c["mt"][m] for m in variants if m in c["mt"]]
        return max(ran) if ran else None
    return pick


def row(name, s, n_cells):
    w, t, lo, worst, where = s
    ok = "yes" if w >= BAR_WINS and worst >= BAR_SET and w + t + lo == n_cells else "no"
    print(f"| {name} | {w} / {t} / {lo} | {worst:+.3f} ({where}) | {ok} |")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("files", nargs="+", help="mtc_compare --save files")
    args = p.parse_args(argv)
    cells, methods = merge(args.files)
    cells = rebase(cells, pooled_baselines(args.files), THREE)
    n = len(cells)
    variants = sorted({m for c in cells for m in c["mt"]})
    full = [m for m in variants if all(m in c["mt"] for c in cells)]
    print(f"# {n} cells, {len(variants)} SpectralMTC variants ({len(full)} run on every cell); "
          f"against the best of {', '.join(THREE)}; W / T / L by more than {TIE} NMI; "
          f"the bar: >= {BAR_WINS} wins, no data set below {BAR_SET}\n")
    print("| choice | W / T / L | worst data set | meets the bar |")
    print("|---|---|---|---|")
    for m in full:
        row(f"{m} (fixed)", score(cells, lambda c, m=m: c["mt"][m]), n)
    pairs = []
    for a, b in itertools.combinations(full, 2):
        ch = per_set(cells, [a, b])
        pairs.append((score(cells, lambda c, ch=ch: c["mt"][ch[c["data"]]]), a, b))
    if pairs:
        s, a, b = max(pairs, key=lambda x: (x[0][0], x[0][3]))
        row(f"labels: per data set, best pair ({a} / {b})", s, n)
    ch = per_set(cells, variants)
    row("labels: per data set, any variant",
        score(cells, lambda c: c["mt"][ch[c["data"]]] if c["data"] in ch else None), n)
    coupled = [m for m in variants if not m.endswith("-mu0")]
    controls = [m for m in variants if m.endswith("-mu0")]
    row("labels: per cell, coupled variants", score(cells, best_in_cell(coupled)), n)
    row("labels: per cell, coupling-0 controls", score(cells, best_in_cell(controls)), n)
    row("labels: per cell, any variant", score(cells, best_in_cell(variants)), n)
    print("\nPer data set, the variant the labels choose: "
          + ", ".join(f"{d}: {m}" for d, m in ch.items()))


if __name__ == "__main__":
    main()
