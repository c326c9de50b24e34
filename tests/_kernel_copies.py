"""Copies of numba kernels that have no Python entry point, for the oracle tests.

Some kernels are compiled for the compiled callers only (``@njit(no_cpython_wrapper=True)``
or an internal signature): calling them from Python crashes the interpreter. A test that
checks such a kernel against a reference calls :func:`entry` instead, which compiles the same
source again with an entry point (once per kernel). Under ``NUMBA_DISABLE_JIT=1`` the kernel
is a plain Python function and ``njit`` returns it unchanged, so the copy is the function
itself (the ``nojit`` tox environment runs these oracles interpreted).
"""

import numba

_COPIES = {}


def entry(kernel):
    """``kernel`` compiled again from its source with a Python entry point (cached per kernel).

    Parameters
    ----------
    kernel : numba dispatcher or function
        A compiled kernel (its ``py_func`` is the source) or, with ``NUMBA_DISABLE_JIT=1``,
        the plain function.

    Returns
    -------
    callable
        A dispatcher compiled with ``nogil=True`` callable from Python (the plain function
        when JIT compilation is disabled).
    """
    copy = _COPIES.get(kernel)
    if copy is None:
        copy = _COPIES[kernel] = numba.njit(nogil=True)(getattr(kernel, "py_func", kernel))
    return copy
