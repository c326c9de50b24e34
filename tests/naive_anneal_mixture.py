"""Deterministic-annealing EM for a mixture of multinomials, written with loops (test oracle).

Independent of bregclust: Ueda & Nakano (1998), "Deterministic annealing EM algorithm", with a
conjugate (Dirichlet) prior on the word probabilities as the smoothing. At inverse temperature
``b`` the E-step gives document ``i`` to component ``h`` with responsibility proportional to
``(pi_h prod_l p_hl^x_il)^b`` (the multinomial coefficient is the same for every component and
cancels); the M-step is the usual MAP one, ``pi_h = sum_i r_ih / n`` and
``p_hl = (sum_i r_ih x_il + s z_l) / (sum_i r_ih N_i + s)`` with ``z`` the corpus' word
distribution and ``s`` the smoothing pseudo-count. Every sum is a Python loop over documents,
components and words: slow, for corpora of a few dozen documents only.
"""

import math

import numpy as np


def _row_logits(x, weights, means):
    """``log pi_h + sum_l x_l log p_hl`` of one document for every component (loops)."""
    out = []
    for h in range(len(weights)):
        v = math.log(weights[h])
        for l, c in enumerate(x):
            if c != 0:
                v += c * math.log(means[h][l])
        out.append(v)
    return out


def logit_gaps(X, weights, means):
    """Per document, its largest logit minus its second largest."""
    gaps = []
    for x in X:
        t = sorted(_row_logits(x, weights, means), reverse=True)
        gaps.append(t[0] - t[1])
    return gaps


def schedule(gaps, nats, rate):
    """``b0 = nats / median gap`` (the median by sorting), then ``b0 rate^j`` while below 1."""
    g = sorted(v for v in gaps if math.isfinite(v) and v > 0)
    m = len(g)
    med = g[m // 2] if m % 2 else 0.5 * (g[m // 2 - 1] + g[m // 2])
    out, b = [], nats / med
    while b < 1.0:
        out.append(b)
        b *= rate
    return out


def em_step(X, weights, means, b, s, z):
    """One annealed EM iteration at inverse temperature ``b``; returns ``(weights, means,
    objective)``, the objective ``sum_i (1/b) log sum_h (pi_h p(x_i | h))^b`` (without the
    multinomial coefficients) minus ``s sum_h KL(z || p_h)``, both at the parameters given."""
    n, d = len(X), len(X[0])
    k = len(weights)
    R = []
    total = 0.0
    for x in X:
        t = [b * v for v in _row_logits(x, weights, means)]
        top = max(t)
        e = [math.exp(v - top) for v in t]
        tot = sum(e)
        R.append([v / tot for v in e])
        total += (top + math.log(tot)) / b
    penalty = 0.0
    for h in range(k):
        for l in range(d):
            if z[l] > 0:
                penalty += z[l] * math.log(z[l] / means[h][l])
    new_w, new_m = [], []
    for h in range(k):
        W = sum(R[i][h] for i in range(n))
        new_w.append(W / n)
        S = [sum(R[i][h] * X[i][l] for i in range(n)) for l in range(d)]
        mass = sum(S)
        new_m.append([(S[l] + s * z[l]) / (mass + s) for l in range(d)])
    return new_w, new_m, total - s * penalty


def annealed_em(X, weights, means, *, nats, rate, iters, final_iters, s):
    """Annealed EM from ``(weights, means)``: ``iters`` iterations at every temperature of
    :func:`schedule` (``b0`` from the gaps at the start), then ``final_iters`` plain EM
    iterations (``b = 1``).

    Returns
    -------
    dict with ``weights``, ``means`` (lists), ``betas`` (the schedule) and ``objectives`` (a
    list per temperature, then the plain phase's, each value at the parameters entering the
    iteration).
    """
    X = [list(map(float, row)) for row in np.asarray(X)]
    d = len(X[0])
    col = [sum(row[l] for row in X) for l in range(d)]
    z = [c / sum(col) for c in col]
    weights, means = list(map(float, weights)), [list(map(float, m)) for m in means]
    betas = schedule(logit_gaps(X, weights, means), nats, rate)
    objectives = []
    for b in betas + [1.0]:
        obj = []
        for _ in range(iters if b < 1.0 else final_iters):
            weights, means, f = em_step(X, weights, means, b, s, z)
            obj.append(f)
        objectives.append(obj)
    return dict(weights=weights, means=means, betas=betas, objectives=objectives)
