"""Row sums of phi for the built-in generators, called without a function pointer.

A call of a kernel that takes the generator's function pointer ``fn`` (numba's first-class
function type) costs about 20 us of typing and unboxing in numba's dispatcher before the kernel
runs. The centres' ``phi`` of a small fit is computed on every iteration (thousands of calls in
``bregclust demo``) on arrays whose sums take a few microseconds, and a built-in generator never
calls the pointer. This kernel takes the code alone and adds the same terms in the same order
as :func:`~bregclust._kernels.lloyd.rowsum` (the same bits). A jitted placeholder passed for the
pointer instead would make the kernel uncacheable (numba treats it as a dynamic global).
"""

import numpy as np
from numba import njit

from .generators import IS, JIT, KL, SQ, abs_phi, is_phi, kl_phi
from .lloyd import _sq_rows

__all__ = ["rowsum_builtin", "kl_rows_from_log"]


@njit(**JIT)
def rowsum_builtin(code, X, out):
    """OUT ``out[i] = sum_l phi(X[i, l])`` of the built-in generator ``code`` (not
    :data:`~bregclust._kernels.generators.CUSTOM`) for a dense 2-D array, each row added left to
    right as :func:`~bregclust._kernels.lloyd.rowsum` adds it."""
    if code == SQ:
        _sq_rows(X, 0, X.shape[0], out)
        return
    d = X.shape[1]
    for i in range(X.shape[0]):
        s = 0.0
        for l in range(d):
            x = np.float64(X[i, l])
            if code == KL:
                s += kl_phi(x)
            elif code == IS:
                s += is_phi(x)
            else:
                s += abs_phi(x)
        out[i] = s


@njit(**JIT)
def kl_rows_from_log(U, G, out):
    """OUT ``out[i] = sum_l (u_il log u_il - u_il)`` (kl's phi of the rows of ``U``) from
    ``G = log U`` already computed in float64 (the centres' gradient): the terms of
    :func:`~bregclust._kernels.generators.kl_phi` (0 at ``u = 0``, NaN below) added left to
    right, with no second logarithm per coordinate."""
    n, d = U.shape
    for i in range(n):
        s = 0.0
        for l in range(d):
            x = np.float64(U[i, l])
            if x > 0.0:
                s += x * G[i, l] - x
            elif x != 0.0:
                s += np.nan
        out[i] = s
