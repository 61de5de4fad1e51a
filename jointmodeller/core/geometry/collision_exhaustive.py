"""Plain exhaustive predictive collision search: every moving point against every target point.

O(n·m) in chunks of numpy arrays; the reference for the tests and the baseline of the benchmark
("exhaustive search" of seed 004 §4.2). The pair test is written component by component in the
same order as the grid kernel, so both give bit-identical distances and times.
"""

from __future__ import annotations

import numpy as np

#: pairs evaluated per chunk (memory ~ 8 arrays of this many float64)
CHUNK_PAIRS = 250_000


def search_exhaustive(
    pa: np.ndarray,
    ea: np.ndarray,
    sa: np.ndarray,
    ia: np.ndarray,
    pb: np.ndarray,
    nb: np.ndarray,
    ib: np.ndarray,
    tol: float,
    d_min: float = 0.0,
) -> tuple[float, int, int]:
    """Earliest (time, i, j): time = l·e / s_i over pairs with n_j·e < 0, |l × e| < tol, l·e >= d_min.

    pa, ea (n, 3) ray origins and unit directions, sa (n,) speeds, numbered ia (n,); pb, nb (m, 3)
    target points and unit normals numbered ib (m,); l = pb_j - pa_i. Ties go to the smaller i,
    then j. Returns (inf, -1, -1) when no pair qualifies.
    """
    n, m = pa.shape[0], pb.shape[0]
    if n == 0 or m == 0:
        return np.inf, -1, -1
    tol2 = float(tol) * float(tol)
    order_b = np.argsort(ib, kind="stable")
    pb, nb, ib = pb[order_b], nb[order_b], ib[order_b]
    order_a = np.argsort(ia, kind="stable")
    pa, ea, sa, ia = pa[order_a], ea[order_a], sa[order_a], ia[order_a]
    b0, b1, b2 = pb[:, 0][None, :], pb[:, 1][None, :], pb[:, 2][None, :]
    m0, m1, m2 = nb[:, 0][None, :], nb[:, 1][None, :], nb[:, 2][None, :]
    chunk = max(1, CHUNK_PAIRS // m)
    best = (np.inf, -1, -1)
    for s in range(0, n, chunk):
        e0, e1, e2 = (ea[s:s + chunk, k][:, None] for k in range(3))
        nde = m0 * e0 + m1 * e1 + m2 * e2
        l0 = b0 - pa[s:s + chunk, 0][:, None]
        l1 = b1 - pa[s:s + chunk, 1][:, None]
        l2 = b2 - pa[s:s + chunk, 2][:, None]
        d = l0 * e0 + l1 * e1 + l2 * e2
        q0 = l1 * e2 - l2 * e1
        q1 = l2 * e0 - l0 * e2
        q2 = l0 * e1 - l1 * e0
        h2 = q0 * q0 + q1 * q1 + q2 * q2
        ok = (nde < 0.0) & (h2 < tol2) & (d >= d_min)
        if not ok.any():
            continue
        d = np.where(ok, d / sa[s:s + chunk][:, None], np.inf)
        k = int(np.argmin(d))  # first minimum in row-major order: smallest i, then smallest j
        r, c = divmod(k, m)
        cand = (float(d[r, c]), int(ia[s + r]), int(ib[c]))
        if cand < best:
            best = cand
    return best
