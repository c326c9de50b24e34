"""The numba preset, the built-in scalar generators and the one specialisation mechanism.

Every generator-dependent kernel of the package takes a **generator code** and a **function
pointer** ``fn`` (numba's first-class function type ``float64(float64)``). The built-in codes
evaluate the registry's own scalar functions inline (no indirect call); :data:`CUSTOM` calls
``fn``, a C callback compiled once per registered generator and owned by its registry record.
The kernels themselves therefore never depend on a user function: they are compiled once and
cached on disk (``cache=True``) like every other kernel, and a newly registered generator costs
only the compilation of its own scalar functions.

A C callback cannot raise into the kernel that calls it. The callback of a user function
therefore catches an exception, returns NaN and records the failure (count, argument, source)
in a process-wide record; the Python layer that ran the kernel calls :func:`check_callbacks`
(or runs it inside :func:`callback_errors`), which raises the user's exception once - by calling
the compiled function again at the recorded argument - instead of a result computed from NaN.

Under ``NUMBA_DISABLE_JIT=1`` ``fn`` is the plain Python function, whose exceptions propagate.
"""

import math
import sys
import threading
from contextlib import contextmanager

import numpy as np
from llvmlite import ir
from numba import cfunc, config, get_num_threads, njit, types
from numba.extending import intrinsic

# One preset for every kernel. fastmath is deliberately off: the kernels evaluate logs near the
# domain edge (kl, Itakura-Saito) and reassociation there changes results. No kernel is used as
# a C callback of its own (those are compiled by :func:`compiled_pointer`), so numba builds no
# C wrapper for them (``no_cfunc_wrapper``: it would be optimised and emitted with every kernel).
JIT = dict(cache=True, nogil=True, no_cfunc_wrapper=True)
PJIT = dict(JIT, parallel=True)
# Kernels called only by other kernels (inner helpers of the agglomerative drivers): no Python
# entry point either. numba builds it for every compiled function and optimises and emits it to
# machine code with it, which costs compilation time and serves no caller here.
# Such a kernel cannot be called from Python (the call would jump to a null address): a helper
# that a test calls directly keeps JIT.
INNER_JIT = dict(JIT, no_cpython_wrapper=True)
INNER_PJIT = dict(PJIT, no_cpython_wrapper=True)

DOMAIN_CODES = {"real": 0, "nonnegative": 1, "positive": 2}
REAL, NONNEGATIVE, POSITIVE = 0, 1, 2

# generator codes
SQ, KL, IS, ABS, CUSTOM = 0, 1, 2, 3, 4
# which scalar function of a generator
PHI, DPHI, DPHI_INV = 0, 1, 2

_SIGNATURE = "float64(float64)"


# --------------------------------------------------------------------------- built-in generators
@njit(**JIT)
def sq_phi(x):
    return x * x


@njit(**JIT)
def sq_dphi(x):
    return 2.0 * x


@njit(**JIT)
def sq_dphi_inv(t):
    return 0.5 * t


@njit(**JIT)
def kl_phi(x):
    if x > 0.0:
        return x * math.log(x) - x
    if x == 0.0:
        return 0.0
    return np.nan


@njit(**JIT)
def kl_dphi(x):
    if x > 0.0:
        return math.log(x)
    if x == 0.0:
        return -np.inf
    return np.nan


@njit(**JIT)
def kl_dphi_inv(t):
    return math.exp(t)


@njit(**JIT)
def is_phi(x):
    if x > 0.0:
        return -math.log(x)
    return np.inf if x == 0.0 else np.nan


@njit(**JIT)
def is_dphi(x):
    if x > 0.0:
        return -1.0 / x
    return -np.inf if x == 0.0 else np.nan


@njit(**JIT)
def is_dphi_inv(t):
    return -1.0 / t


@njit(**JIT)
def abs_phi(x):
    return abs(x)


@njit(**JIT)
def sign_dphi(x):
    # A subgradient of |x| (0 at 0). Only used by generic code paths; the l1 divergence has its
    # own kernels (it is not differentiable).
    if x > 0.0:
        return 1.0
    if x < 0.0:
        return -1.0
    return 0.0


@njit(**JIT)
def _nan(x):
    return np.nan


# --------------------------------------------------------------------------- dispatch by code
@njit(**JIT)
def phi_of(code, fn, x):
    """``phi(x)`` of the generator ``code`` (``fn`` for :data:`CUSTOM`)."""
    if code == SQ:
        return sq_phi(x)
    if code == KL:
        return kl_phi(x)
    if code == IS:
        return is_phi(x)
    if code == ABS:
        return abs_phi(x)
    return fn(x)


@njit(**JIT)
def dphi_of(code, fn, x):
    """``phi'(x)`` of the generator ``code`` (``fn`` for :data:`CUSTOM`)."""
    if code == SQ:
        return sq_dphi(x)
    if code == KL:
        return kl_dphi(x)
    if code == IS:
        return is_dphi(x)
    if code == ABS:
        return sign_dphi(x)
    return fn(x)


@njit(**JIT)
def dphi_inv_of(code, fn, x):
    """``(phi')^-1(x)`` of the generator ``code`` (``fn`` for :data:`CUSTOM`)."""
    if code == SQ:
        return sq_dphi_inv(x)
    if code == KL:
        return kl_dphi_inv(x)
    if code == IS:
        return is_dphi_inv(x)
    return fn(x)


@njit(**JIT)
def scalar_of(code, which, fn, x):
    """``phi``, ``phi'`` or its inverse (``which`` in PHI, DPHI, DPHI_INV) at ``x``."""
    if which == PHI:
        return phi_of(code, fn, x)
    if which == DPHI:
        return dphi_of(code, fn, x)
    return dphi_inv_of(code, fn, x)


# ---------------------------------------------------------------------------- C callbacks
#: Failures of user callbacks since the last check: ``[count, argument, source]`` (``source``
#: indexes :data:`_SOURCES`). Written by compiled code through its address (see
#: :func:`_record_failure`), read and reset by :func:`check_callbacks`.
_FAILURES = np.zeros(3)
_FAILURES_ADDRESS = _FAILURES.ctypes.data
#: ``(label, compiled function)`` of every callback, by its source number
_SOURCES = []


@intrinsic
def _record_failure(typingctx, address, x, source):
    """Store one failure (count + 1, argument, source) in the record at ``address``; plain
    stores, so concurrent failures may mix their argument and source (each is one of them)."""
    sig = types.void(types.intp, types.float64, types.float64)

    def codegen(context, builder, signature, args):
        a, xv, sv = args
        dbl = ir.DoubleType()
        ptr = builder.inttoptr(a, dbl.as_pointer())
        builder.store(builder.fadd(builder.load(ptr), ir.Constant(dbl, 1.0)), ptr)
        builder.store(xv, builder.gep(ptr, [ir.Constant(ir.IntType(32), 1)]))
        builder.store(sv, builder.gep(ptr, [ir.Constant(ir.IntType(32), 2)]))
        return context.get_dummy_value()

    return sig, codegen


def function_pointer(f, label=None):
    """A first-class function ``float64(float64)`` for the kernels: a C callback calling the
    scalar ``f`` (a numba dispatcher), compiled once by the caller and kept on its registry
    record. An exception raised by ``f`` is caught: the callback returns NaN and records the
    failure for :func:`check_callbacks`, which names ``label`` (e.g. ``"phi of divergence
    'x'"``). ``None`` gives the placeholder of :func:`placeholder`."""
    if f is None:
        return placeholder()
    if config.DISABLE_JIT:
        return f
    label = label or f"the generator function {getattr(f, '__name__', f)!r}"
    hit = _FP_CACHE.get((id(f), label))
    if hit is not None and hit[0] is f:
        return hit[1]
    address = _FAILURES_ADDRESS
    source = float(len(_SOURCES))

    def _call(x):
        try:
            return f(x)
        except Exception:  # reported by check_callbacks
            _record_failure(address, x, source)
            return np.nan

    fp = cfunc(_SIGNATURE)(_call)
    _SOURCES.append((label, f))
    _FP_CACHE[(id(f), label)] = (f, fp)  # f kept alive: its id is never reused
    return fp


def check_callbacks():
    """Raise the failure of a user callback recorded since the last check (and reset the record).

    The compiled function is called again at the recorded argument, so the user's own
    exception is raised (with a note naming the function and the argument); a function that
    does not fail again gives a ``ValueError`` naming both.

    Returns
    -------
    None

    Raises
    ------
    Exception
        The user's exception, or ``ValueError``.
    """
    if _FAILURES[0] == 0.0:
        return
    count, x, source = (float(v) for v in _FAILURES)
    _FAILURES[:] = 0.0
    label, f = _SOURCES[int(source)]
    where = (f"{label} failed at x = {x!r} inside a compiled kernel "
             f"({int(count)} failed call{'s' if count != 1 else ''})")
    try:
        f(x)
    except Exception as exc:
        exc.add_note(where + "; the kernel's result was discarded.")
        raise
    raise ValueError(f"{where}, but not when called again; the kernel's result was discarded. "
                     "Make the function deterministic and free of side effects.")


#: How the object numba's C callback wrapper passes to ``sys.unraisablehook`` with an
#: exception raised inside a compiled callback begins (the exception cannot cross the C
#: boundary): ``"<numba.core.cpu.CPUContext>"`` in numba 0.68, the context's default repr
#: ``"<numba.core.cpu.CPUContext object at 0x...>"`` in 0.60 and 0.61.
_CALLBACK_OBJECT = "<numba.core.cpu.CPUContext"


#: Reports of C callbacks caught while a :func:`callback_errors` context is open anywhere in the
#: process (the callbacks run on numba's worker threads, so the record cannot be per thread),
#: the number of open contexts, and the hook they replaced.
_CAUGHT = []
_OPEN = [0, None]
_LOCK = threading.Lock()


def _report_hook(unraisable):
    if (str(unraisable.object).startswith(_CALLBACK_OBJECT)
            and unraisable.exc_value is not None):
        _CAUGHT.append(unraisable.exc_value)
    else:
        _OPEN[1](unraisable)


@contextmanager
def callback_errors():
    """Context of a kernel call with user callbacks or kernels called through function pointers
    (:func:`compiled_pointer`): the failure record is reset on entry and :func:`check_callbacks`
    runs on a normal exit. An exception raised inside a compiled C callback cannot propagate
    through the kernel that called it (numba reports it to ``sys.unraisablehook`` and the call
    returns zero); while a context is open the hook records such reports (others go to the hook
    it replaced, restored when the last open context closes), and the context raises the first
    recorded exception on exit, so the kernel's result is discarded. Contexts may be nested and
    opened from several threads at once."""
    _FAILURES[:] = 0.0
    with _LOCK:
        if _OPEN[0] == 0:
            _OPEN[1] = sys.unraisablehook
            sys.unraisablehook = _report_hook
        _OPEN[0] += 1
    try:
        yield
    finally:
        with _LOCK:
            _OPEN[0] -= 1
            if _OPEN[0] == 0:
                sys.unraisablehook = _OPEN[1]
            caught = _CAUGHT[:]
            _CAUGHT.clear()
    if caught:
        exc = caught[0]
        exc.add_note("Raised inside a compiled kernel called through a function pointer; the "
                     "kernel's result was discarded.")
        raise exc
    check_callbacks()


#: C callbacks of kernels by (function, signature): numba never frees machine code, and a
#: signature compiles once per process (then loads from the on-disk cache).
_POINTER_CACHE = {}


def compiled_pointer(pyfunc, signature, **options):
    """``pyfunc`` compiled once as a C callback of the numba ``signature`` (``cfunc``, cached on
    disk): a first-class function that compiled kernels take as an argument and call through
    its pointer. numba links the code of every function a kernel calls into the kernel's own
    library and optimises and emits it again there; a kernel called through a pointer is
    compiled once, whatever calls it. An exception inside it cannot propagate to the caller:
    call such kernels inside :func:`callback_errors`. Under ``NUMBA_DISABLE_JIT`` the plain
    function.

    Parameters
    ----------
    pyfunc : function or numba dispatcher
        The kernel's Python source (a dispatcher's ``py_func`` is compiled).
    signature : numba signature
        Its exact argument and return types (a caller must pass exactly these types).
    **options
        Further numba compilation options (e.g. ``_nrt=False``).

    Returns
    -------
    numba CFunc or function
    """
    pyfunc = getattr(pyfunc, "py_func", pyfunc)
    if config.DISABLE_JIT:
        return pyfunc
    key = (pyfunc, signature, tuple(sorted(options.items())))
    hit = _POINTER_CACHE.get(key)
    if hit is None:
        # a callback with a parallel loop loaded from the cache links against numba's threading
        # layer, which nothing else may have started in this process (LLVM then aborts the
        # process: "Symbol not found: allocate_sched"); get_num_threads starts it
        get_num_threads()
        hit = _POINTER_CACHE[key] = cfunc(signature, cache=True, **options)(pyfunc)
    return hit


#: Function pointers by the scalar dispatcher they call (and their label): numba never frees
#: machine code, so a generator registered again with the same (cached) dispatchers reuses its
#: callbacks.
_FP_CACHE = {}
_INV_CACHE = {}


def _nan_callback(x):
    return np.nan


_PLACEHOLDER = []


def placeholder():
    """The shared function pointer (returning NaN) passed for built-in generator codes, which
    never call it; cached on disk like the kernels."""
    if not _PLACEHOLDER:
        fp = _nan if config.DISABLE_JIT else cfunc(_SIGNATURE, cache=True)(_nan_callback)
        _PLACEHOLDER.append(fp)
    return _PLACEHOLDER[0]


def make_inverse(df, domain_code):
    """A scalar inverse of an increasing ``f'`` by bracketing and bisection.

    Used when a registered generator gives no ``dphi_inv``. On ``positive``/``nonnegative``
    domains the bracket grows geometrically towards 0 and infinity; on ``real`` it grows
    symmetrically. Bisection runs until the bracket stops shrinking (machine precision).
    Like the user's own scalar functions, it is compiled once per registration.

    Parameters
    ----------
    df : numba dispatcher
        The increasing scalar derivative ``f'``.
    domain_code : int
        :data:`REAL`, :data:`NONNEGATIVE` or :data:`POSITIVE`.

    Returns
    -------
    numba dispatcher
        ``t -> (f')^-1(t)``.
    """

    hit = _INV_CACHE.get((id(df), domain_code))
    if hit is not None and hit[0] is df:
        return hit[1]

    @njit(nogil=True)
    def _inv(t):
        if domain_code == 0:
            lo, hi = -1.0, 1.0
            for _ in range(2100):
                if df(lo) <= t:
                    break
                lo *= 2.0
            for _ in range(2100):
                if df(hi) >= t:
                    break
                hi *= 2.0
            for _ in range(2200):
                mid = 0.5 * (lo + hi)
                if mid <= lo or mid >= hi:
                    break
                if df(mid) < t:
                    lo = mid
                else:
                    hi = mid
            return 0.5 * (lo + hi)
        lo, hi = 1.0, 1.0
        for _ in range(2100):
            if lo < 1e-300 or df(lo) <= t:
                break
            lo *= 0.5
        for _ in range(2100):
            if hi > 1e300 or df(hi) >= t:
                break
            hi *= 2.0
        for _ in range(2200):
            mid = math.sqrt(lo) * math.sqrt(hi) if hi > 4.0 * lo else 0.5 * (lo + hi)
            if mid <= lo or mid >= hi:
                break
            if df(mid) < t:
                lo = mid
            else:
                hi = mid
        return 0.5 * (lo + hi)

    _INV_CACHE[(id(df), domain_code)] = (df, _inv)
    return _inv
