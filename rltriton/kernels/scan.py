"""The scan core shared by every fused kernel.

An estimator step is an affine map ``x -> alpha + beta * x``. A tile of
``[BLOCK_N rows, BLOCK_T steps]`` is scanned along time with ``tl.associative_scan``
over (alpha, beta) pairs; the state entering the tile (the ``carry``) comes from the
previous chunk of the same rows in scan order, so a program walks any number of chunks
with fixed registers, and any T works.

Combine: with ``acc`` the composition of the elements already scanned and ``new`` the
next element in scan order, ``new ∘ acc = (a_new + b_new a_acc, b_new b_acc)``.

Backward estimators hold a chunk in one of these forms (``launch._GROUP_TILES`` picks by
Triton version; :func:`chunk_times`):

* **group form** (Triton >= 3.7): groups of ``G = 4`` steps in descending order, each group
  ascending in memory (one vector load per thread), turned into the scan-ordered
  ``[BN, BT]`` tile only around the scan (:func:`scan_order`, :func:`group_order`: a flip
  inside each thread's group and a reshape, no data movement), so the scan is a forward
  ``tl.associative_scan``: 12 shuffles per thread for a [1, 512] tile of (alpha, beta) on 4
  warps, where ``reverse=True`` (lowered as flip, scan, flip) costs 92. The flips reverse
  the lanes of the whole warp, five butterfly shuffles per value each way, however few lanes
  a row spans (Triton 3.6: 80 of the 184 SASS instructions a thread of a [32, 8] scan of a
  pair on 2 warps; see ``launch._TINY_WARP_ELEMS``).
* **group form scanned in two levels** (``GROUP_TILES = 2``; Triton < 3.7, where
  ``launch._group_scan`` says: tiles of 64 steps or more, one chunk a row, a split, or a
  chunk loop for the forms of ``launch._GROUP_SCAN_LOOP``): the
  group form as loaded, [BN, BT/4, 4], never reshaped: each thread composes its groups'
  maps, a forward scan over the groups gives the state entering each group, and the
  group's states follow in registers (:func:`group_scan`). 24 shuffles per thread at
  [1, 512] on 4 warps with Triton 3.6 as with 3.8, for the lagged scans too; 1.1-1.5x
  faster than time order on an H200 with Triton 3.6.
* **flat rows** (``GROUP_TILES = 3``; Triton < 3.7, ``launch._flat_rows``: tiles of
  several short rows of 16 steps up to 32-64 by form): the group form of the tile with the
  rows laid one after another along the group axis, ``[1, BN * BT/4, 4]``, scanned as one
  sequence in two levels; each row's last step ignores the row scanned before it
  (:func:`chunk_tile`). A single row of groups is already in the layout Triton scans in:
  one barrier a program where the ``[BN, ...]`` group scan takes 5 with Triton 3.6; up to
  1.4x faster than time order at 16-32 steps on an H200.
* **lanes** (``GROUP_TILES = 4``; Triton < 3.7, ``launch._ROW_LANES``: many short rows of
  16-64 steps by form): each row across L = 4-8 lanes, ``[L, BN, NC, 4]``, so a warp's loads
  read whole lines of a row; the scan runs across a row's lanes and then along each thread's
  columns in registers (:func:`lane_scan`), with no barrier.
* **descending time** (``GROUP_TILES = 6``; Triton < 3.7, ``launch._DESC_MAX_T``: tiles of
  at most 8 steps): ``[BN, BT]`` in scan order, scanned forward; its accesses run backwards
  in memory, so they are scalar, but no lanes are flipped.
* **time order** (Triton < 3.7, the other tiles: Retrace's chunk loop, short tiles of several rows):
  ``[BN, BT]`` in ascending time, scanned
  with ``reverse=True``. Those versions lower the group form's reshape as a layout
  conversion through shared memory (4-8 KB a program), which made the kernels MIO-bound
  and 1.4-6x slower on an H200 with Triton 3.6 than the 92 shuffles.

Time-major storage (``[T, N]``, rows contiguous; ``TIME_MAJOR``) turns the tile around: 4
rows per thread, the lanes mostly along rows, and each thread holding a run of its rows'
steps in scan order, so the scan over time runs in registers and a few shuffles
(:func:`program_tile`). Many short time-major rows instead take the **time-major lanes**
form (``GROUP_TILES = 5``, ``launch._TM_LANES``): every lane along rows (2 a thread, one
8-byte access), the warps along time, and each thread K consecutive steps of its rows in
registers, scanned serially there and then across the warps (:func:`tm_lanes_scan`).
"""

from __future__ import annotations

import triton
import triton.language as tl


def triton_version() -> tuple[int, int]:
    """(major, minor) of the installed Triton (a suffix such as ``rc1`` or ``+git...`` ignored)."""
    major, minor = (triton.__version__.split(".") + ["0"])[:2]
    return int(major), int("".join(ch for ch in minor if ch.isdigit()) or 0)


# Where a lanes tile (GROUP_TILES = 4, lane_scan) puts a row's lanes. Triton lays an access out
# from the contiguity of its addresses and gives the lanes, among the axes that tie, to the
# lowest one (Triton 3.6) or to the highest (3.7 on; 3.8 seen): the tile is [L, BN, NC, 4]
# for the first, [NC, BN, L, 4] for the second, so that either way the lanes run along a
# row's consecutive groups and then along the rows.
LANES_LAST = tl.constexpr(triton_version() >= (3, 7))


@triton.jit
def affine_combine(a_acc, b_acc, a_new, b_new):
    """(a_new, b_new) ∘ (a_acc, b_acc) for maps x -> a + b x."""
    return a_new + b_new * a_acc, b_new * b_acc


@triton.jit
def times(b, x, CUT: tl.constexpr = False):
    """b * x; with ``CUT``, 0 where b is 0 whatever x is (a NaN or inf x too). TD(lambda)'s
    recursion chooses ``nv_t`` where an episode ends (SPEC.md section 3) instead of
    multiplying the later return by 0, so a non-finite later episode must not reach it;
    the other estimators' formulas multiply, and keep IEEE's 0 * NaN = NaN."""
    if CUT:
        return tl.where(b == 0, 0.0, b * x)
    else:
        return b * x


@triton.jit
def madd(a, b, x, CUT: tl.constexpr = False):
    """a + b * x (one FMA); with ``CUT``, ``a`` where b is 0 whatever x is: the cut of
    :func:`times` as a select after the FMA. Selecting the product before the add cost a
    multiply, a select and an add where this takes an FMA and a select, and the cut scans'
    combines and group steps are almost all of this form (Triton 3.6, sm_90: TD(lambda)
    [1, 2048] on 16 warps 432 -> 384 SASS instructions a thread, 352 uncut)."""
    if CUT:
        return tl.where(b == 0, a, a + b * x)
    else:
        return a + b * x


@triton.jit
def affine_combine_cut(a_acc, b_acc, a_new, b_new):
    """:func:`affine_combine` for a recursion cut where b = 0 (:func:`times`)."""
    return madd(a_new, b_new, a_acc, True), b_new * b_acc


@triton.jit
def affine_after_cut(a_acc, b_acc, a_new, b_new):
    """:func:`affine_after` for a recursion cut where b = 0 (:func:`times`)."""
    return madd(a_acc, b_acc, a_new, True), b_acc * b_new


@triton.jit
def affine_combine_lagged_cut(p_acc, q_acc, x_acc, y_acc, p_new, q_new, x_new, y_new):
    """:func:`affine_combine_lagged` for a recursion cut where b = 0 (:func:`times`)."""
    return p_new * p_acc, q_new * p_acc, madd(x_new, p_new, x_acc, True), madd(y_new, q_new, x_acc, True)


@triton.jit
def scan_maps(a, b, REV: tl.constexpr = False, CUT: tl.constexpr = False):
    """The forward scan along axis 1 of the maps x -> a + b x (``REV``: from the last
    column), composed with :func:`affine_combine`, or :func:`affine_combine_cut` with ``CUT``."""
    if CUT:
        return tl.associative_scan((a, b), axis=1, combine_fn=affine_combine_cut, reverse=REV)
    else:
        return tl.associative_scan((a, b), axis=1, combine_fn=affine_combine, reverse=REV)


@triton.jit
def affine_after(a_acc, b_acc, a_new, b_new):
    """(a_acc, b_acc) ∘ (a_new, b_new): the composed map applies ``new`` first. Scanning
    steps in time order with it composes a backward recursion's maps f_0 ∘ f_1 ∘ ... (the
    map from the state after the last step to the state at the first)."""
    return a_acc + b_acc * a_new, b_acc * b_new


@triton.jit
def affine_combine_lagged(p_acc, q_acc, x_acc, y_acc, p_new, q_new, x_new, y_new):
    """Composition of maps ``D -> (x + p D, y + q D)`` that also carry the previous state.

    A single step t maps the state ``D_{t+1}`` to ``(D_t, D_{t+1})`` with
    ``(p, q, x, y) = (beta_t, 1, alpha_t, 0)``; composing keeps the second component as
    "the state one step later in time", which V-trace needs for ``vs_{t+1}``.
    """
    return p_new * p_acc, q_new * p_acc, x_new + p_new * x_acc, y_new + q_new * x_acc


@triton.jit
def affine_combine_lagged_seg(f_acc, p_acc, q_acc, x_acc, y_acc, f_new, p_new, q_new, x_new, y_new):
    """:func:`affine_combine_lagged` segmented by the flags ``f`` (1 where a segment starts):
    a composition that reaches a segment start keeps only what follows it, by a select, so a
    NaN or inf of an earlier segment does not reach it through a multiplication by 0."""
    p, q, x, y = affine_combine_lagged(p_acc, q_acc, x_acc, y_acc, p_new, q_new, x_new, y_new)
    new = f_new != 0
    return (f_acc | f_new, tl.where(new, p_new, p), tl.where(new, q_new, q), tl.where(new, x_new, x),
            tl.where(new, y_new, y))


@triton.jit
def lagged_scan(alpha, beta, axis: tl.constexpr, CUT: tl.constexpr = False, REV: tl.constexpr = False):
    """The scan of the maps ``x -> alpha + beta x`` along ``axis`` with the lagged combine
    (:func:`affine_combine_lagged`; with ``CUT`` :func:`affine_combine_lagged_cut`; ``REV``:
    from the last element): ``(p, q, x, y)``, with ``x + p c`` the state at each element and
    ``y + q c`` the state before it in scan order, for ``c`` the state entering the scan."""
    one = tl.full(alpha.shape, 1.0, alpha.dtype)
    zero = tl.zeros(alpha.shape, alpha.dtype)
    if CUT:
        p, q, x, y = tl.associative_scan((beta, one, alpha, zero), axis=axis, combine_fn=affine_combine_lagged_cut,
                                         reverse=REV)
    else:
        p, q, x, y = tl.associative_scan((beta, one, alpha, zero), axis=axis, combine_fn=affine_combine_lagged,
                                         reverse=REV)
    return p, q, x, y


@triton.jit
def _neg_zero(x):
    """-0.0 in the shape and dtype of ``x``, made from its bits: ``x + -0.0`` is ``x`` for every
    ``x``, so a masked sum with it beside one element folds to that element, where ``x + 0.0``
    cannot (-0.0 + 0.0 is 0.0). ``tl.full`` stores -0.0 as 0.0, and Triton negates as 0 - x."""
    if x.dtype == tl.float64:
        return tl.full(x.shape, -9223372036854775808, tl.int64).to(tl.float64, bitcast=True)
    else:
        return tl.full(x.shape, -2147483648, tl.int32).to(tl.float32, bitcast=True)


@triton.jit
def aligned(s, D: tl.constexpr):
    """The stride ``s``, which the launcher found to be a multiple of ``D`` (a power of two;
    ``launch._row_div``), in a form Triton can see that in: ``(s // D) D``. Triton
    specialises integer arguments divisible by 16, not by 4 or 8, so without it a row stride
    of 24 or 1000 leaves every access of a batch-major tile scalar, and may give the tile a
    layout that the scans convert through shared memory (Triton 3.6, discounted returns
    [128, 8] as a group-form tile: 79 registers and 106 SASS instructions an element, with the
    hint 32 and 33). ``tl.multiple_of`` on the argument itself changed nothing (a [32, 8]
    time-order tile: 98 SASS instructions an element with it or without, 68 with this). The
    launcher passes T through it too: a masked vector needs ``t < T`` alike across it. On the
    time-major tiles (``TM_DIV``) it is R and the time strides instead, as those tiles'
    vectors run along rows, masked by ``row < R``."""
    if D > 1:
        return (s // D) * D
    else:
        return s


@triton.jit
def row_stride(s, T, D: tl.constexpr, ROWS_T: tl.constexpr):
    """A per-step tensor's row stride ``s`` as a backward kernel uses it: T itself where the
    launcher found every per-step tensor of the call in contiguous rows of T steps
    (``ROWS_T``, ``launch._ROWS_T``: one row offset then serves every tensor), else ``s`` shown
    as a multiple of ``D`` (:func:`aligned`)."""
    if ROWS_T:
        return T
    else:
        return aligned(s, D)


@triton.jit
def exact_t(T, BLOCK_T: tl.constexpr, EXACT_T: tl.constexpr, PHASE: tl.constexpr, ONE_CHUNK: tl.constexpr):
    """A row's length as a backward kernel uses it: the constant BLOCK_T under ``EXACT_T``
    (``launch._exact_t``: one pass whose one chunk is exactly the row), so the tests against T
    fold away, else the runtime ``T``."""
    if EXACT_T:
        tl.static_assert(PHASE == 0 and ONE_CHUNK, "EXACT_T: one pass, one chunk a row")
        return BLOCK_T
    else:
        return T


@triton.jit
def clip_max(x, bound):
    """min(x, bound), NaN where x is NaN: the importance ratios' clips as SPEC's arithmetic
    (and torch.clamp) give them. ``tl.minimum`` by default returns ``bound`` for a NaN x;
    with ``PropagateNan.ALL`` it is one ``min.NaN`` instruction (a select of ``x != x``
    took V-trace's PHASE 2 from 130 to 156 registers with Triton 3.8)."""
    return tl.minimum(x, bound, propagate_nan=tl.PropagateNan.ALL)


@triton.jit
def last_column(x, REV: tl.constexpr = False):
    """The last element in scan order of each row of a [BN, BT] tile, as [BN]: the last
    column, or column 0 for a tile in time order scanned in reverse (``REV``)."""
    BT: tl.constexpr = x.shape[1]
    cols = tl.arange(0, BT)[None, :]
    if REV:
        pick = cols == 0
    else:
        pick = cols == BT - 1
    return tl.sum(tl.where(pick, x, 0.0), axis=1)


@triton.jit
def scan_tile(alpha, beta, carry, REV: tl.constexpr = False, CUT: tl.constexpr = False,
              SEG_GROUPS: tl.constexpr = 0, LANES: tl.constexpr = False, TM_W: tl.constexpr = 0):
    """Scan a [BN, BT] tile of (alpha, beta), columns in scan order (``REV``: in time
    order, scanned from the last column), from the per-row ``carry`` [BN]. Returns the
    tile of states and the carry for the next chunk. A [BN, BT/4, 4] tile takes the
    two-level scan (:func:`group_scan`, segmented every SEG_GROUPS groups if > 0), with
    ``LANES`` (``GROUP_TILES = 4``) :func:`lane_scan`, and with ``TM_W`` > 0 (a time-major
    lanes tile on that many warps) :func:`tm_lanes_scan`."""
    if TM_W > 0:
        out, _next, c = tm_lanes_scan(alpha, beta, carry, TM_W, CUT)
        return out, c
    elif LANES:
        out, _next, c = lane_scan(alpha, beta, carry, CUT)
        return out, c
    elif len(alpha.shape) == 3:
        out, _next, c = group_scan(alpha, beta, carry, CUT, SEG_GROUPS)
        return out, c
    else:
        a, b = scan_maps(alpha, beta, REV, CUT)
        out = madd(a, b, carry[:, None], CUT)
        return out, last_column(out, REV)


@triton.jit
def scan_tile_lagged(alpha, beta, carry, REV: tl.constexpr = False, SEG_GROUPS: tl.constexpr = 0,
                     LANES: tl.constexpr = False, TM_W: tl.constexpr = 0):
    """:func:`scan_tile` that also returns, at each column, the state one step earlier
    in scan order (for a backward estimator, the state at t+1; the carry at the first
    step). Returns ``(D_t, D_{t+1}, new carry)``. A [BN, BT/4, 4] tile takes the
    two-level scan (:func:`group_scan`, segmented every SEG_GROUPS groups if > 0), with
    ``LANES`` :func:`lane_scan`, and with ``TM_W`` > 0 :func:`tm_lanes_scan`."""
    if TM_W > 0:
        return tm_lanes_scan(alpha, beta, carry, TM_W)
    elif LANES:
        return lane_scan(alpha, beta, carry)
    elif len(alpha.shape) == 3:
        return group_scan(alpha, beta, carry, False, SEG_GROUPS)
    else:
        p, q, x, y = lagged_scan(alpha, beta, 1, False, REV)
        c = carry[:, None]
        out = x + p * c
        return out, y + q * c, last_column(out, REV)


@triton.jit
def group_pick(x, j: tl.constexpr):
    """Step ``j`` of each group of a [BN, NG, 4] group-form tile, as [BN, NG] (or of a
    [L, BN, NC, 4] tile of ``GROUP_TILES = 4``, as [L, BN, NC]): a masked sum over the group,
    which lies inside one thread (register selects, no shuffles)."""
    if len(x.shape) == 4:
        k = tl.arange(0, 4)[None, None, None, :]
    else:
        k = tl.arange(0, 4)[None, None, :]
    # -0.0 beside the step, so the sum folds to the step itself (an add a pick with 0.0)
    return tl.sum(tl.where(k == j, x, _neg_zero(x)), axis=len(x.shape) - 1)


@triton.jit
def group_tile(x0, x1, x2, x3):
    """The [BN, NG, 4] group-form tile with steps ``x0 .. x3`` ([BN, NG] each), by
    broadcasting (the inverse of :func:`group_pick`; [L, BN, NC] steps give [L, BN, NC, 4])."""
    if len(x0.shape) == 3:
        k = tl.arange(0, 4)[None, None, None, :]
        return tl.where(k == 0, x0[:, :, :, None],
                        tl.where(k == 1, x1[:, :, :, None], tl.where(k == 2, x2[:, :, :, None], x3[:, :, :, None])))
    else:
        k = tl.arange(0, 4)[None, None, :]
        return tl.where(k == 0, x0[:, :, None],
                        tl.where(k == 1, x1[:, :, None], tl.where(k == 2, x2[:, :, None], x3[:, :, None])))


@triton.jit
def group_steps(alpha, beta, CUT: tl.constexpr = False):
    """The 4 steps' maps of each group of a group-form tile of (alpha, beta), [BN, NG] each
    (``a0 .. a3, b0 .. b3``, ascending in time), and each group's composed map
    F = f_0 ∘ f_1 ∘ f_2 ∘ f_3 (``fa, fb``: step 3 applies first, as the scan runs)."""
    a0 = group_pick(alpha, 0)
    a1 = group_pick(alpha, 1)
    a2 = group_pick(alpha, 2)
    a3 = group_pick(alpha, 3)
    b0 = group_pick(beta, 0)
    b1 = group_pick(beta, 1)
    b2 = group_pick(beta, 2)
    b3 = group_pick(beta, 3)
    fa = madd(a0, b0, madd(a1, b1, madd(a2, b2, a3, CUT), CUT), CUT)
    return a0, a1, a2, a3, b0, b1, b2, b3, fa, b0 * b1 * b2 * b3


@triton.jit
def group_scan(alpha, beta, carry, CUT: tl.constexpr = False, SEG_GROUPS: tl.constexpr = 0):
    """The two-level scan of a group-form tile (``GROUP_TILES = 2``): [BN, NG, 4], group g
    holding 4 steps ascending in time, groups in scan order (descending time), so steps
    are scanned k = 3, 2, 1, 0 inside a group. Each thread composes its groups' maps
    F_g = f_0 ∘ f_1 ∘ f_2 ∘ f_3 in registers; a forward scan over the groups with the lagged
    combine (:func:`affine_combine_lagged`) gives, from ``carry`` [BN], the state entering
    each group; the 4 states of a group follow in registers. No reshape (which Triton 3.6
    lowers as a layout conversion through shared memory) and no reverse scan: 24 shuffles
    per thread for a [1, 512] tile on 4 warps, where the time-order form's reverse scan
    takes 92 (Triton 3.6). Returns (the states [BN, NG, 4], the states one step later in
    time, i.e. earlier in scan order [BN, NG, 4], the carry out [BN]).

    SEG_GROUPS > 0 (rows laid end to end, ``GROUP_TILES = 3``, with
    ``launch._FLAT_SEGMENTED``): every SEG_GROUPS groups start a new row, and the scan over
    the groups is segmented there (:func:`affine_combine_lagged_seg`; the carry is 0), so a
    row's states never take the previous row's through the row end's 0 coefficient."""
    a0, a1, a2, a3, b0, b1, b2, b3, fa, fb = group_steps(alpha, beta, CUT)
    if SEG_GROUPS > 0:
        one = tl.full(fa.shape, 1.0, fa.dtype)
        zero = tl.zeros(fa.shape, fa.dtype)
        starts = (tl.arange(0, fa.shape[1]) % SEG_GROUPS == 0).to(tl.int32)[None, :]
        flags = tl.broadcast_to(starts, fa.shape)
        _f, _p, q, _x, y = tl.associative_scan((flags, fb, one, fa, zero), axis=1,
                                               combine_fn=affine_combine_lagged_seg)
    else:
        _p, q, _x, y = lagged_scan(fa, fb, 1, CUT)
    c = carry[:, None]
    e = madd(y, q, c, CUT)  # the state entering each group (after it in time)
    s3 = madd(a3, b3, e, CUT)
    s2 = madd(a2, b2, s3, CUT)
    s1 = madd(a1, b1, s2, CUT)
    s0 = madd(a0, b0, s1, CUT)
    # the carry out is the earliest step's state, taken from the states (the layout they are
    # in) rather than as x + p c from the scan's own: with Triton 3.6 that mixed the two
    # layouts in a chunk loop, and the carry's broadcast became a whole-tile conversion
    # (70 shared-memory stores per thread at [1, 1024] on 8 warps; now 6)
    return group_tile(s0, s1, s2, s3), group_tile(s1, s2, s3, e), last_column(s0)


@triton.jit
def group_map(alpha, beta, CUT: tl.constexpr = False):
    """The composed map (A, B) [BN] of a whole group-form tile (``GROUP_TILES = 2``, see
    :func:`group_scan`): each group's map in registers, then a forward scan over the groups."""
    _a0, _a1, _a2, _a3, _b0, _b1, _b2, _b3, fa, fb = group_steps(alpha, beta, CUT)
    a, b = scan_maps(fa, fb, False, CUT)
    return last_column(a), last_column(b)


@triton.jit
def lane_scan(alpha, beta, carry, CUT: tl.constexpr = False):
    """The scan of a tile of ``GROUP_TILES = 4`` (:func:`chunk_times`): row n's group
    ``L c + l`` of 4 steps (ascending in time; groups in scan order, descending time) at
    [l, n, c] of [L, BN, NC, 4], or at [c, n, l] of [NC, BN, L, 4] with ``LANES_LAST``, the
    axis order that Triton's layout of the tile's accesses turns into lanes along l, then along
    the rows: the L lanes of a row read L consecutive groups (a whole 128-byte line of float32
    for L = 8), and each thread holds NC groups L apart. Each thread composes its groups' maps
    F = f_0 ∘ f_1 ∘ f_2 ∘ f_3 in registers; a forward scan across the L lanes with the lagged
    combine (:func:`affine_combine_lagged`) gives, for every column c at once, the map from
    the state entering the column to the state entering each group, and its last lane the
    column's map; the columns follow one another in each thread's registers from ``carry``
    [BN] (the recursion ``A_t = alpha_t + beta_t A_{t+1}`` composed, one column after the
    other); then each group's 4 states. log2(L) shuffle rounds for the whole tile and no
    barrier, where :func:`group_scan` on rows laid end to end takes a round per doubling of
    the program's groups and a pass through shared memory across warps. Returns what
    :func:`group_scan` returns: (the states, the states one step later in time, the last state
    in scan order [BN])."""
    a0, a1, a2, a3, b0, b1, b2, b3, fa, fb = group_steps(alpha, beta, CUT)  # [L, BN, NC] or [NC, BN, L]
    # scanned as [NC, BN, L]: Triton gives a scan the default layout of its shape (the lanes
    # from the last axis), which is the layout the tile's loads gave these maps (the lanes
    # along l, then the rows), so with the lanes first (Triton 3.6) the permutes move no data;
    # scanned along axis 0 of [L, BN, NC] they went through shared memory (3 conversions a tile)
    if LANES_LAST:
        fa_t = fa
        fb_t = fb
    else:
        fa_t = tl.permute(fa, (2, 1, 0))
        fb_t = tl.permute(fb, (2, 1, 0))
    L: tl.constexpr = fa_t.shape[2]
    NC: tl.constexpr = fa_t.shape[0]
    p, q, x, y = lagged_scan(fa_t, fb_t, 2, CUT)
    last = tl.arange(0, L)[None, None, :] == L - 1
    col_a = tl.sum(tl.where(last, x, 0.0), axis=2)  # [NC, BN]: each column's map (its last lane)
    col_b = tl.sum(tl.where(last, p, 0.0), axis=2)
    cols = tl.arange(0, NC)[:, None]
    c = carry
    enter = tl.zeros(col_a.shape, col_a.dtype)  # the state entering each column
    for j in tl.static_range(NC):
        pick = cols == j
        enter = tl.where(pick, c[None, :], enter)
        c = madd(tl.sum(tl.where(pick, col_a, 0.0), axis=0), tl.sum(tl.where(pick, col_b, 0.0), axis=0), c, CUT)
    e = madd(y, q, enter[:, :, None], CUT)  # the state entering each group
    if not LANES_LAST:
        e = tl.permute(e, (2, 1, 0))
    s3 = madd(a3, b3, e, CUT)
    s2 = madd(a2, b2, s3, CUT)
    s1 = madd(a1, b1, s2, CUT)
    s0 = madd(a0, b0, s1, CUT)
    return group_tile(s0, s1, s2, s3), group_tile(s1, s2, s3, e), c


@triton.jit
def _in_thread_last(x):
    """The last element along axis 1 of a [BN, K, W] tile of :func:`tm_lanes_scan`, whose axis
    1 lies inside each thread, as [BN, W]: a masked sum with -0.0 beside the element (see
    :func:`_neg_zero`), which folds to the element itself."""
    K: tl.constexpr = x.shape[1]
    k = tl.arange(0, K)[None, :, None]
    return tl.sum(tl.where(k == K - 1, x, _neg_zero(x)), axis=1)


@triton.jit
def _tm_lanes_parts(alpha, beta, W: tl.constexpr, CUT: tl.constexpr = False):
    """The scans of :func:`tm_lanes_scan` without the carry: the tile as [BN, K, W] (K = BT / W
    steps of warp w at [:, :, w], in scan order), each thread's steps scanned in registers
    with the lagged combine (``x + p c`` is the state at a step and ``y + q c`` the one
    before it in scan order, for ``c`` entering the warp's steps), and the warps' composed
    maps scanned across the warps likewise (``X + P C``, ``Y + Q C`` [BN, W], for ``C``
    entering the tile)."""
    BN: tl.constexpr = alpha.shape[0]
    K: tl.constexpr = alpha.shape[1] // W
    p, q, x, y = lagged_scan(tl.reshape(alpha, [BN, K, W]), tl.reshape(beta, [BN, K, W]), 1, CUT)
    P, Q, X, Y = lagged_scan(_in_thread_last(x), _in_thread_last(p), 1, CUT)
    return p, q, x, y, P, Q, X, Y


@triton.jit
def tm_lanes_scan(alpha, beta, carry, W: tl.constexpr, CUT: tl.constexpr = False):
    """The scan of a time-major lanes tile (``GROUP_TILES = 5``, :func:`chunk_times`,
    :func:`segment_chunk`) of (alpha, beta) [BN, BT] from ``carry`` [BN]: the recursion
    ``A = alpha + beta A'`` with ``A'`` the state before in scan order (at t + 1 for a
    backward estimator, t - 1 for a forward one). Column ``i`` holds scan position
    ``(i % W) K + i // W``, which
    Triton's layout of the tile's accesses (rows along the lanes, time along the ``W``
    warps) puts in warp ``i % W``, K = BT / W consecutive positions in each thread. Each
    thread scans its K steps serially in registers; the W groups' composed maps are scanned
    across the groups (through shared memory across warps; a tile of fewer than 32 rows has
    several groups a warp, ``launch._tm_groups``) into the state entering each group's steps,
    which one FMA a step then applies. Returns (the states [BN, BT], the states one step
    earlier in scan order [BN, BT] (for a backward estimator, one step later in time), the
    carry out [BN])."""
    BN: tl.constexpr = alpha.shape[0]
    BT: tl.constexpr = alpha.shape[1]
    p, q, x, y, P, Q, X, Y = _tm_lanes_parts(alpha, beta, W, CUT)
    c = carry[:, None]
    enter = madd(Y, Q, c, CUT)[:, None, :]  # [BN, 1, W]: the state entering each warp's steps
    out = madd(x, p, enter, CUT)
    before = madd(y, q, enter, CUT)
    return tl.reshape(out, [BN, BT]), tl.reshape(before, [BN, BT]), last_column(madd(X, P, c, CUT))


@triton.jit
def tm_lanes_map(alpha, beta, W: tl.constexpr, CUT: tl.constexpr = False):
    """The composed map (A, B) [BN] of a whole time-major lanes tile (see :func:`tm_lanes_scan`)."""
    _p, _q, _x, _y, P, _Q, X, _Y = _tm_lanes_parts(alpha, beta, W, CUT)
    return last_column(X), last_column(P)


@triton.constexpr_function
def lanes_per_row(BLOCK_T):
    """The lanes a row of ``BLOCK_T`` steps spans in a ``GROUP_TILES = 4`` tile: 8 (one
    128-byte line of float32 a load), fewer for rows of fewer than 32 steps, and one for rows
    of at most 8: a row a thread, its two groups in one thread's registers (the lanes of a
    warp then read 32 rows' 32 bytes side by side)."""
    return 1 if BLOCK_T <= 8 else min(8, BLOCK_T // 4)


@triton.jit
def tile_rows(rows, ts):
    """``rows`` ([BN, 1]) shaped to broadcast with times ``ts`` of any form of
    :func:`chunk_times`: [BN, 1], [BN, 1, 1], or [1, BN, 1, 1] for ``GROUP_TILES = 4``."""
    if len(ts.shape) == 4:
        return rows[None, :, :, None]
    elif len(ts.shape) == 3:
        return rows[:, :, None]
    else:
        return rows


@triton.jit
def chunk_start(seg, SEG, i, n_chunks, BLOCK_T: tl.constexpr):
    """The first step of the i-th chunk in scan order of segment ``seg``: the chunks of a
    backward estimator are taken from the segment's last one back (:func:`chunk_times`)."""
    return seg * SEG + (n_chunks - 1 - i) * BLOCK_T


@triton.jit
def interior_chunk(seg, SEG, T, BLOCK_T: tl.constexpr, PHASE: tl.constexpr, ONE_CHUNK: tl.constexpr,
                   BLOCK_N: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr = 1):
    """Whether segment ``seg``'s one chunk (steps ``seg SEG`` to ``seg SEG + BLOCK_T - 1``)
    lies wholly before T - 1, so that its program may run it with no test against T (the
    backward kernels' ``INTERIOR``, ``launch._INTERIOR``): a time split (its two passes, or
    with ``launch._INTERIOR_SINGLE_PASS`` the single passes of PHASE 3 to 5), one chunk a
    segment, one row a program, batch-major group-form tiles (``GROUP_TILES`` 1 or 2; the
    forward kernel passes 1)."""
    tl.static_assert(PHASE >= 1 and ONE_CHUNK and BLOCK_N == 1 and not TIME_MAJOR
                     and (GROUP_TILES == 1 or GROUP_TILES == 2),
                     "INTERIOR: a time split of one-row group-form tiles, one chunk a segment")
    return seg * SEG + BLOCK_T < T


@triton.jit
def chunk_times(seg, SEG, i, n_chunks, BLOCK_T: tl.constexpr, TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr,
                ROWS: tl.constexpr = 1, TM_W: tl.constexpr = 0):
    """Times (int32: every compare with T and every step arithmetic is one instruction where
    int64 took two; :func:`t_off` widens them for an address; the launcher keeps T below
    ``launch._MAX_T``) of the i-th chunk in scan order of segment ``seg`` of a backward
    estimator, in one of three forms:

    * group form (``GROUP_TILES``) [1, BT/G, G]: group g holds steps ``t_hi - G g - (G-1)
      ... t_hi - G g`` (ascending within the group, so a thread's group is one vector
      load), with ``t_hi`` the chunk's last step. ``scan_order`` of this is ``t_hi - j``
      at column j, scanned forward. With ``ROWS`` > 1 (``GROUP_TILES = 3``, see
      :func:`chunk_tile`) [1, ROWS BT/G, G]: the groups of ``ROWS`` rows one after another.
    * lanes (``GROUP_TILES = 4``, see :func:`lane_scan`) [L, 1, BT/(4L), 4], L =
      :func:`lanes_per_row`: group ``L c + l`` of the chunk (in scan order) at [l, 0, c]
      ([BT/(4L), 1, L, 4], at [c, 0, l], with ``LANES_LAST``).
    * time order (no ``GROUP_TILES``) [1, BT]: ``t_lo + j`` at column j, scanned with
      ``reverse=True``. Triton before 3.7 turns the group form's reshape into a layout
      conversion through shared memory (4-8 KB a program, MIO-bound: 6x slower at
      512 x 4096 on an H200), while its reverse scan stays in registers and shuffles.
    * descending time (``GROUP_TILES = 6``, batch-major tiles of at most
      ``launch._DESC_MAX_T`` steps) [1, BT]: ``t_hi - j`` at column j, scan order, scanned
      forward. The accesses run backwards in memory, so they are scalar (still coalesced: a
      warp reads whole rows), and no lanes are flipped.
    * TIME_MAJOR (rows are the contiguous axis, see :func:`program_tile`) [1, BT]: times
      descend (scan order, scanned forward); the vector accesses run along rows. Held as
      [1, BT, 1] before, its reshape cost Triton 3.6 224 shuffles per thread at [128, 16]
      on 4 warps and 3.8 four more layout conversions; as [1, BT] none and two fewer.
    * time-major lanes (``GROUP_TILES = 5`` on ``TM_W`` thread groups along time, see
      :func:`tm_lanes_scan`) [1, BT]: column ``i`` holds scan position ``s = (i % TM_W) K +
      i // TM_W``, K = BT / TM_W, i.e. time ``t_hi - s``. The tile's accesses run along rows
      only, so Triton gives the lanes to the rows and the warps to the time axis, and each
      thread holds its columns ``w, w + TM_W, ...``: group w's K consecutive steps in scan
      order. A group is a warp for tiles of 32 rows or more; a tile of fewer (``BN`` < 32)
      leaves each warp ``32 / BN`` lanes along time, which Triton's layout puts before the
      warps (lane ``i % (32 / BN)``), so a group is one of those lanes of one warp and TM_W
      is the warps times ``32 / BN`` (``launch._tm_groups``)."""
    t_lo = chunk_start(seg, SEG, i, n_chunks, BLOCK_T)
    if GROUP_TILES == 5:
        tl.static_assert(TM_W > 0, "a time-major lanes tile needs its thread groups along time (TM_W)")
        K: tl.constexpr = BLOCK_T // TM_W
        col = tl.arange(0, BLOCK_T)
        return t_lo + (BLOCK_T - 1) - ((col % TM_W) * K + col // TM_W)[None, :]
    elif TIME_MAJOR or GROUP_TILES == 6:
        return t_lo + (BLOCK_T - 1) - tl.arange(0, BLOCK_T)[None, :]
    elif GROUP_TILES == 4:
        L: tl.constexpr = lanes_per_row(BLOCK_T)
        if LANES_LAST:
            lane = tl.arange(0, L)[None, None, :, None]
            col = tl.arange(0, BLOCK_T // (4 * L))[:, None, None, None]
        else:
            lane = tl.arange(0, L)[:, None, None, None]
            col = tl.arange(0, BLOCK_T // (4 * L))[None, None, :, None]
        k = tl.arange(0, 4)[None, None, None, :]
        return t_lo + (BLOCK_T - 4) - 4 * (L * col + lane) + k
    elif GROUP_TILES:
        G: tl.constexpr = 4 if BLOCK_T >= 4 else BLOCK_T
        g = tl.arange(0, ROWS * (BLOCK_T // G))
        if ROWS > 1:
            g = g % (BLOCK_T // G)
        g = g[None, :, None]
        k = tl.arange(0, G)[None, None, :]
        return t_lo + (BLOCK_T - G) - G * g + k
    else:
        return t_lo + tl.arange(0, BLOCK_T)[None, :]


@triton.jit
def chunk_tile(seg, SEG, T, i, n_chunks, rows, row_mask, BLOCK_T: tl.constexpr, TIME_MAJOR: tl.constexpr,
               GROUP_TILES: tl.constexpr, TM_W: tl.constexpr = 0):
    """The i-th chunk of a backward kernel: ``(rows, row mask, times (:func:`chunk_times`),
    mask of in-range elements)``, rows and row mask shaped to broadcast with the times
    ([BN, 1, 1] for the group form, else [BN, 1]).

    ``GROUP_TILES = 3`` (launch._flat_rows; PHASE 0, rows of one chunk, several a
    program): the group form with the program's rows laid one after another along the group
    axis, [1, BN * BT/4, 4], rows per group from :func:`program_tile`. Its scan is the
    two-level group scan of a single sequence; a row's end (t = T - 1) must then ignore the
    state after it, which in the [BN, ...] forms is the zero carry: the kernels whose beta
    is not already 0 there (GAE, V-trace) set it so. The point is the layout: with one row
    of groups, the groups' maps are in the layout Triton scans in, so the 3 conversions
    through shared memory of ``GROUP_TILES = 2`` on [BN > 1, ...] tiles go away."""
    if GROUP_TILES == 3:
        # the program's rows one after another along the group axis ([1, BN * BT/4, 4]):
        # row r's groups are r * BT/4 ... (r + 1) * BT/4 - 1, each row's in descending time
        ts = chunk_times(seg, SEG, i, n_chunks, BLOCK_T, TIME_MAJOR, GROUP_TILES, rows.shape[1] * 4 // BLOCK_T)
    else:
        ts = chunk_times(seg, SEG, i, n_chunks, BLOCK_T, TIME_MAJOR, GROUP_TILES, 1, TM_W)
    rows_t = tile_rows(rows, ts)
    row_mask_t = tile_rows(row_mask, ts)
    return rows_t, row_mask_t, ts, row_mask_t & (ts < T)


@triton.jit
def scan_order(x, GROUP_TILES: tl.constexpr = 1):
    """A tile of :func:`chunk_times`'s form as [BN, BT] for the scan: the group form
    flipped inside each group and reshaped; the two-dimensional forms as they are. With
    ``GROUP_TILES = 2`` (groups scanned in two levels, :func:`group_scan`) the group form
    stays as it is (and with ``GROUP_TILES = 3``): the scan functions take [BN, BT/4, 4] tiles."""
    if len(x.shape) == 2 or GROUP_TILES >= 2:
        return x
    else:
        BN: tl.constexpr = x.shape[0]
        BT: tl.constexpr = x.shape[1] * x.shape[2]
        if x.shape[2] == 1:  # one-step chunks: nothing to flip
            return tl.reshape(x, [BN, BT])
        else:
            return tl.reshape(tl.flip(x, 2), [BN, BT])


@triton.jit
def group_order(x, like):
    """The inverse of :func:`scan_order`: [BN, BT] back to the form of ``like`` (a tile
    already in that form, as the two-level scan returns it, stays as it is)."""
    if len(like.shape) == 2 or len(x.shape) >= 3:
        return x
    else:
        if like.shape[2] == 1:
            return tl.reshape(x, like.shape)
        else:
            return tl.flip(tl.reshape(x, like.shape), 2)


@triton.jit
def t_off(ts, s_t):
    """``ts * s_t`` in int64: the times of :func:`chunk_times` are int32, their product with a
    stride (the row count, time-major) need not fit."""
    return ts.to(tl.int64) * s_t


@triton.jit
def load_tile(ptr, rows, ts, s_n, s_t, mask, DT: tl.constexpr, other=0.0):
    """Load ``ptr[rows * s_n + ts * s_t]`` (int64 offsets) and convert to ``DT``."""
    return tl.load(ptr + rows * s_n + t_off(ts, s_t), mask=mask, other=other).to(DT)


@triton.jit
def load_after(ptr, rows, row_mask, ts, T, s_n, s_t, DT: tl.constexpr):
    """``ptr[rows, t + 1]`` (0 where t + 1 >= T) read straight from memory, for times ``ts``
    of any form of :func:`chunk_times`; rows and row_mask are [BN, 1]."""
    return load_tile(ptr, tile_rows(rows, ts), ts + 1, s_n, s_t, tile_rows(row_mask, ts) & (ts + 1 < T), DT)


@triton.jit
def load_next(x, ptr, rows, row_mask, ts, T, s_n, s_t, DT: tl.constexpr, GROUP_TILES: tl.constexpr = 1):
    """``ptr[rows, t + 1]`` (0 where t + 1 >= T) for a tile whose steps ``ts`` (a form of
    :func:`chunk_times`) were loaded into ``x`` (0 where t >= T); rows and row_mask are
    [BN, 1].

    In the group form, inside a group of 4 the next step is the thread's next element: a
    register shift of ``x``; only the group's last step reads memory (the first step of the
    later group, held by another thread). That is one load per group instead of four that
    cannot be vector accesses (t + 1 is not 16-byte aligned). The two-dimensional forms
    load ``ts + 1`` directly (time-major tiles: the vector runs along rows, and the row's
    next step is aligned too; time order: Triton < 3.7, where the shift's split and join
    become layout conversions), as do groups of fewer than 4 (:func:`load_after`). With
    ``GROUP_TILES = 2`` the shift takes each step out of the group by a masked sum inside the
    thread and puts them back by broadcasting (:func:`group_pick`, :func:`group_tile`): no
    reshape, split or join, which Triton 3.6 lowers as layout conversions."""
    if len(ts.shape) == 2:
        return load_after(ptr, rows, row_mask, ts, T, s_n, s_t, DT)
    elif ts.shape[len(ts.shape) - 1] == 4 and GROUP_TILES >= 2:
        # the step after each group's last is the first of the group 4 steps later: read as
        # that group's step 0 (the tile's own layout: a load of its own at the groups'
        # last steps made Triton 3.6 convert its layout twice)
        if len(ts.shape) == 4:
            k = tl.arange(0, 4)[None, None, None, :]
        else:
            k = tl.arange(0, 4)[None, None, :]
        later = tl.load(ptr + tile_rows(rows, ts) * s_n + t_off(ts + 4, s_t),
                        mask=tile_rows(row_mask, ts) & (k == 0) & (ts + 4 < T), other=0.0).to(DT)
        return group_tile(group_pick(x, 1), group_pick(x, 2), group_pick(x, 3), group_pick(later, 0))
    elif ts.shape[2] == 4:
        BN: tl.constexpr = x.shape[0]
        NG: tl.constexpr = x.shape[1]
        even, odd = tl.split(tl.reshape(x, [BN, NG, 2, 2]))  # steps (0, 2) and (1, 3)
        x0, x2 = tl.split(even)
        x1, x3 = tl.split(odd)
        # each group's last step, split out of the times like x3 out of x (same layout)
        t_even, t_odd = tl.split(tl.reshape(ts + tl.zeros(x.shape, ts.dtype), [BN, NG, 2, 2]))
        _t1, t_last = tl.split(t_odd)
        e = tl.load(ptr + rows * s_n + t_off(t_last + 1, s_t), mask=row_mask & (t_last + 1 < T), other=0.0).to(DT)
        # next of steps (0, 2) is (1, 3); next of steps (1, 3) is (2, e)
        return tl.reshape(tl.join(tl.join(x1, x3), tl.join(x2, e)), [BN, NG, 4])
    else:
        return load_after(ptr, rows, row_mask, ts, T, s_n, s_t, DT)


@triton.jit
def load_next_only(ptr, rows, row_mask, ts, T, s_n, s_t, DT: tl.constexpr, GROUP_TILES: tl.constexpr = 1):
    """:func:`load_next` where the tile at ``ts`` itself is not otherwise needed: groups of
    4 load it (one vector access) and shift it, which still beats four scalar accesses;
    the other forms read t + 1 (:func:`load_after`)."""
    if len(ts.shape) >= 3:
        if ts.shape[len(ts.shape) - 1] == 4:
            x = load_tile(ptr, tile_rows(rows, ts), ts, s_n, s_t, tile_rows(row_mask, ts) & (ts < T), DT)
            return load_next(x, ptr, rows, row_mask, ts, T, s_n, s_t, DT, GROUP_TILES)
    return load_after(ptr, rows, row_mask, ts, T, s_n, s_t, DT)


@triton.jit
def load_flag(ptr, rows, ts, s_n, s_t, mask):
    """A flag tile as int1 (nonzero = set; bool, integer or float storage)."""
    return tl.load(ptr + rows * s_n + t_off(ts, s_t), mask=mask, other=0) != 0


@triton.jit
def load_coef(ptr, hi, lo, rows, ts, s_n, s_t, mask, IS_TENSOR: tl.constexpr, DT: tl.constexpr):
    """gamma / lam: a per-step tensor tile, or the runtime scalar ``hi + lo``.

    Scalars travel as two float32 halves (Triton passes Python floats as float32): in a
    float64 kernel ``hi + lo`` restores the double to ~48 bits; in float32 it is ``hi``.
    """
    if IS_TENSOR:
        return tl.load(ptr + rows * s_n + t_off(ts, s_t), mask=mask, other=0.0).to(DT)
    else:
        return tl.cast(hi, DT) + tl.cast(lo, DT)


@triton.jit
def scalar(hi, lo, DT: tl.constexpr):
    """A runtime hyper-parameter passed as two float32 halves, in ``DT``."""
    return tl.cast(hi, DT) + tl.cast(lo, DT)


@triton.jit
def next_state_values(
    v_next, nv_ptr, s_nv_n, s_nv_t, lv_ptr, s_lv_n,
    rows, ts, T, mask, row_mask, trunc,
    HAS_VALUES: tl.constexpr, HAS_TRUNC: tl.constexpr, NV_MODE: tl.constexpr, DT: tl.constexpr,
):
    """nv_t of SPEC.md section 2 for a tile; ``v_next`` holds values[t+1] (any value
    where t+1 >= T; it is not used there).

    NV_MODE 1: ``next_values`` (dense, read at t). Otherwise ``values[t+1]`` where
    t < T-1 and step t is not truncated, else 0; then NV_MODE 2: ``bootstrap_values[t]``
    (in ``nv_ptr``) where truncated or t = T-1; NV_MODE 3: ``last_value`` at t = T-1.
    """
    if NV_MODE == 1:
        nv = load_tile(nv_ptr, rows, ts, s_nv_n, s_nv_t, mask, DT)
    else:
        zero = tl.zeros(ts.shape, DT) + tl.zeros(rows.shape, DT)
        if HAS_VALUES:
            inner = ts + 1 < T
            if HAS_TRUNC:
                inner = inner & (trunc == 0)
            nv = tl.where(inner, v_next, zero)
        else:
            nv = zero
        if NV_MODE == 2:
            use = ts == T - 1
            if HAS_TRUNC:
                use = use | trunc
            bv = load_tile(nv_ptr, rows, ts, s_nv_n, s_nv_t, mask & use, DT)
            nv = tl.where(use, bv, nv)
        if NV_MODE == 3:
            if len(rows.shape) == 2:
                # a [BN] vector broadcast along time: loaded as a [BN, 1] column, it made
                # Triton give the whole chunk scan a layout with each row's steps in one
                # thread on time-major tiles (6 conversions through shared memory a chunk
                # for GAE at [128, 16] on 4 warps, Triton 3.6 and 3.8; V-trace 16384 x 512
                # time-major 186 -> 110 us on an H200); now one conversion of the vector
                lv = row_values(lv_ptr, s_lv_n, rows, row_mask, DT)[:, None]
            else:
                lv = tl.load(lv_ptr + rows * s_lv_n, mask=row_mask, other=0.0).to(DT)
            nv = tl.where(ts == T - 1, lv, nv)
    return nv


@triton.jit
def row_values(ptr, s_n, rows, row_mask, DT: tl.constexpr):
    """A value per row (``last_value``) as a [BN] vector, for ``rows`` and ``row_mask`` of
    shape [BN, 1] (0 for masked rows)."""
    BN: tl.constexpr = rows.shape[0]
    return tl.load(ptr + tl.reshape(rows, [BN]) * s_n, mask=tl.reshape(row_mask, [BN]), other=0.0).to(DT)


# --- time split -----------------------------------------------------------------------
#
# When rows alone cannot fill the GPU, each row is cut into S segments of SEG steps that
# programs handle in parallel. PHASE 1 scans every segment from a zero carry and stores
# the segment's composed map (A, B) ("summary"; where the coefficients are one constant or
# 0, the map can come from two reductions instead, :func:`constant_chunk_map`, which
# TD(lambda)'s kernel takes: launch._MAP_REDUCE); PHASE 2 composes the summaries of the
# segments that come before it in scan order into its carry-in, rescans and writes the
# outputs. PHASE 0 is the single pass over whole rows (S = 1).


@triton.jit
def chunk_map(alpha, beta, REV: tl.constexpr = False, FORWARD_TOTAL: tl.constexpr = False,
              CUT: tl.constexpr = False, TM_W: tl.constexpr = 0):
    """The composed map (A, B) of a whole [BN, BT] tile in scan order (``REV``: a tile in
    time order, scanned in reverse), as two [BN].

    ``FORWARD_TOTAL`` (with ``REV``): only the total is needed, so the tile in time order is
    scanned forward with the composition taken the other way round (:func:`affine_after`):
    the last column holds f_0 ∘ f_1 ∘ ... ∘ f_{BT-1}, the map the reverse scan leaves in
    column 0, without the flips that Triton 3.6 lowers ``reverse=True`` into (PHASE 1 of GAE
    at [1, 2048] on 8 warps: 188 -> 28 shuffles per thread with Triton 3.6,
    tests/test_kernels_static.py; ``launch._SEGMENT_MAP_FORWARD``). A [BN, BT/4, 4] tile:
    :func:`group_map`; a time-major lanes tile (``TM_W`` > 0): :func:`tm_lanes_map`."""
    if TM_W > 0:
        return tm_lanes_map(alpha, beta, TM_W, CUT)
    elif len(alpha.shape) == 3:
        return group_map(alpha, beta, CUT)
    elif REV and FORWARD_TOTAL:
        if CUT:
            a, b = tl.associative_scan((alpha, beta), axis=1, combine_fn=affine_after_cut)
        else:
            a, b = tl.associative_scan((alpha, beta), axis=1, combine_fn=affine_after)
        return last_column(a), last_column(b)
    else:
        a, b = scan_maps(alpha, beta, REV, CUT)
        return last_column(a, REV), last_column(b, REV)


@triton.jit
def _row_min(x):
    """The minimum of each row of a [BN, X] or [BN, X, Y] tile, as [BN]."""
    if len(x.shape) == 3:
        return tl.min(tl.min(x, 2), 1)
    else:
        return tl.min(x, 1)


@triton.jit
def _row_sum(x):
    """The sum of each row of a [BN, X] or [BN, X, Y] tile, as [BN]."""
    if len(x.shape) == 3:
        return tl.sum(tl.sum(x, 2), 1)
    else:
        return tl.sum(x, 1)


@triton.jit
def _per_row(v, like):
    """[BN] as a tile that broadcasts with ``like`` ([BN or 1, X] or [BN or 1, X, Y])."""
    if len(like.shape) == 3:
        return v[:, None, None]
    else:
        return v[:, None]


@triton.jit
def constant_chunk_map(alpha, beta, ts, t_lo, T, k, BLOCK_T: tl.constexpr, CUT: tl.constexpr = False):
    """The composed map (A, B) of a chunk of the backward recursion x_t = alpha_t + beta_t
    x_{t+1} (steps ``t_lo`` ... ``t_lo + BLOCK_T - 1``, times ``ts`` in any of
    :func:`chunk_times`' batch-major forms) whose beta is one scalar ``k`` in [0, 1] at every
    step before T except where it is 0 (scalar gamma and lam: an episode's end), and 1 where
    masked past T: two reductions instead of a scan. With p = t - t_lo and f each row's first p
    where beta is 0 (BLOCK_T if none), the product of beta before step p is k^p up to f and 0
    past it, so A = sum_{p <= f} alpha_p k^p and B = k^n (n the chunk's steps before T) where
    f = BLOCK_T, else 0. ``CUT`` (:func:`times`): the terms past f are left out, as the cut
    scan leaves them; otherwise they enter as alpha * 0, so a NaN or inf there reaches A as
    ``0 * x`` carries it in the plain scan. k^p is 2^(p log2 k): the approximate log2 of
    float32 errs by at most about 2^-22 absolutely, so the weight of step p by about p 2^-22
    relatively, below the scan's own p eps32 from p products (``launch._MAP_REDUCE``)."""
    pos = ts - t_lo
    f = _row_min(tl.where(beta == 0.0, pos, BLOCK_T))
    log2k = tl.log2(k)
    # (k = 0: log2 k = -inf, and p = 0 must weigh 1, not 2^(0 * -inf) = NaN)
    w = tl.where(pos == 0, 1.0, tl.exp2(pos.to(k.dtype) * log2k))
    before = pos <= _per_row(f, pos)
    if CUT:
        a = _row_sum(tl.where(before, alpha * w, 0.0))
    else:
        a = _row_sum(tl.where(before, alpha * w, alpha * 0.0))
    n = tl.minimum(T - t_lo, BLOCK_T)  # at least 1: no chunk of a segment starts past T
    b = tl.where(f >= BLOCK_T, tl.exp2(n.to(k.dtype) * log2k), 0.0)
    return a, b


@triton.jit
def compose(sa, sb, ca, cb, CUT: tl.constexpr = False):
    """Running segment map (sa, sb), already scanned, followed by a chunk map (ca, cb)."""
    return madd(ca, cb, sa, CUT), cb * sb


@triton.jit
def summary_strides(R, n_segs, TIME_MAJOR: tl.constexpr):
    """(row stride, segment stride) of the summaries of a time split: ``[R, n_segs]``
    row-major, or ``[n_segs, R]`` for time-major tiles, so that their loads run along the
    contiguous rows like the tile's and the scan over segments stays inside each thread."""
    if TIME_MAJOR:
        return 1, R
    else:
        return n_segs, 1


@triton.jit
def store_summary(sum_a_ptr, sum_b_ptr, s_sr, s_ss, rows, row_mask, seg, seg_a, seg_b, PHASE: tl.constexpr):
    """PHASE 1: the composed map (seg_a, seg_b) [BN] of this program's segment, at (rows,
    seg) of the summaries (:func:`summary_strides`); rows and row_mask are [BN, 1]."""
    if PHASE == 1:
        off = rows * s_sr + seg * s_ss
        tl.store(sum_a_ptr + off, seg_a[:, None], mask=row_mask)
        tl.store(sum_b_ptr + off, seg_b[:, None], mask=row_mask)


@triton.jit
def _product(x, y):
    return x * y


# Added to a PHASE 2's CARRY_PROD (launch._PDL_LATE): the summaries come from a prior grid
# still running (a programmatic dependent launch), and segment_carry_in waits for it before
# reading them. One constexpr carries both, so that the carry-in's many call sites (every
# kernel's chunk loop, scan_step) need no parameter of their own.
CARRY_WAIT = tl.constexpr(4)


@triton.jit
def segment_carry_in(
    sum_a_ptr, sum_b_ptr, s_sr, s_ss, rows, row_mask, seg, n_segs, init, REVERSE: tl.constexpr,
    S_BLOCK: tl.constexpr, TIME_MAJOR: tl.constexpr = False, PROD: tl.constexpr = False,
    CUT: tl.constexpr = False,
):
    """The carry entering segment ``seg`` of each row: the composition of the summaries
    of every segment before it in scan order (after it in time for REVERSE) applied to
    ``init`` [BN]. Summary (row, seg) is at ``row * s_sr + seg * s_ss``
    (:func:`summary_strides`); rows is [BN, 1].

    The summary tile holds the segments in scan order (a forward scan) on time-major tiles,
    where the segments lie inside each thread: 88 shuffles per thread at [128, 16] on 4
    warps against 408 for a reverse scan. Otherwise it holds them in storage order,
    scanned in reverse: there a forward scan over descending segments took 142 registers
    against 128 in V-trace's PHASE 2 on 8 warps (Triton 3.6; 136 against 128 on 3.8), which
    halved its programs per SM (119 against 84 us at 16 x 262144 on an H200).

    ``PROD`` (``launch._CARRY_PRODUCTS``, either layout): no two-operand scan. Column k
    holds the k-th segment from this one in scan order (nearest first: seg + 1 + k for
    REVERSE, seg - 1 - k otherwise), so the composition applied to ``init`` is
    ``sum_k a_k prod_{j<k} b_j + (prod_k b_k) init``: the exclusive products are one forward
    ``tl.cumprod`` of b read one column late, and the rest are reductions, which need no
    order (a product and a sum). ``PROD = 2`` (``launch._CARRY_FOLD_INIT``): ``init`` is
    the term of the column past the last segment, so the sum alone gives the carry (no product
    reduction, no second read of the b). ``PROD`` plus :data:`CARRY_WAIT` (``launch._PDL_LATE``): the
    summaries come from a prior grid still running (a programmatic dependent launch), so
    wait for it (:func:`grid_wait`) before reading them, after the tile's loads where
    :func:`scan_step` composes the carry-in. ``CUT``: see :func:`times`."""
    if PROD >= CARRY_WAIT:
        grid_wait()
        MODE: tl.constexpr = PROD - CARRY_WAIT
    else:
        MODE: tl.constexpr = PROD
    cols = tl.arange(0, S_BLOCK)[None, :]
    if MODE:
        if REVERSE:
            segs = seg + 1 + cols
        else:
            segs = seg - 1 - cols
        inside = row_mask & (segs >= 0) & (segs < n_segs)
        off = rows * s_sr + segs * s_ss
        a = tl.load(sum_a_ptr + off, mask=inside, other=0.0)
        # (read here, before the other loads, even where MODE = 2 leaves it unused, as the
        # compiler drops it then: loaded in the branch below, discounted returns' PHASE 2 at
        # 1 x 1048576 took a register more, Triton 3.6)
        b = tl.load(sum_b_ptr + off, mask=inside, other=1.0)
        # b of the column before (1 for column 0): its cumulative product is the exclusive one
        if REVERSE:
            before = seg + cols
        else:
            before = seg - cols
        b_before = tl.load(sum_b_ptr + rows * s_sr + before * s_ss,
                           mask=row_mask & (cols > 0) & (before >= 0) & (before < n_segs), other=1.0)
        excl = tl.cumprod(b_before, axis=1)
        if MODE == 2:
            # init as one more term, in the column just past the segments before this one
            # (there is one: they are at most n_segs - 1 <= S_BLOCK - 1), whose exclusive
            # product is the product of every b: one reduction instead of a sum and a product
            n_before = n_segs - 1 - seg if REVERSE else seg
            a = tl.where(cols == n_before, tl.broadcast_to(init[:, None], a.shape), a)
            return tl.sum(times(excl, a, CUT), axis=1)
        else:
            total_b = tl.reduce(b, 1, _product)
            return madd(tl.sum(times(excl, a, CUT), axis=1), total_b, init, CUT)
    if TIME_MAJOR or not REVERSE:
        if REVERSE:
            segs = n_segs - 1 - cols
            k = n_segs - 1 - seg  # position of this segment in scan order
        else:
            segs = cols
            k = seg
        m = row_mask & (cols < k)
        off = rows * s_sr + segs * s_ss
        a = tl.load(sum_a_ptr + off, mask=m, other=0.0)
        b = tl.load(sum_b_ptr + off, mask=m, other=1.0)
        ca, cb = scan_maps(a, b, False, CUT)
        pick = cols == k - 1
        sel_a = tl.sum(tl.where(pick, ca, 0.0), axis=1)
        sel_b = tl.sum(tl.where(pick, cb, 0.0), axis=1)
        return tl.where(k == 0, init, madd(sel_a, sel_b, init, CUT))
    else:
        # keep this order (masks and pick before the loads): with pick computed after the
        # scan, V-trace's PHASE 2 took 142 registers again with Triton 3.6
        use = (cols > seg) & (cols < n_segs)
        pick = cols == seg + 1
        m = row_mask & use
        off = rows * s_sr + cols * s_ss
        a = tl.load(sum_a_ptr + off, mask=m, other=0.0)
        b = tl.load(sum_b_ptr + off, mask=m, other=1.0)
        ca, cb = scan_maps(a, b, True, CUT)
        sel_a = tl.sum(tl.where(pick, ca, 0.0), axis=1)
        sel_b = tl.sum(tl.where(pick, cb, 0.0), axis=1)
        first = seg == n_segs - 1
        return tl.where(first, init, madd(sel_a, sel_b, init, CUT))


@triton.jit
def segment_chunk(seg, SEG, i, BLOCK_T: tl.constexpr, TM_W: tl.constexpr = 0):
    """Time indices [1, BLOCK_T] (int64) of the i-th chunk of segment ``seg`` of a forward
    estimator (ascending: already scan order; backward estimators use :func:`chunk_times`).
    ``TM_W`` > 0 (a time-major lanes tile on that many warps, see :func:`chunk_times`): column
    ``i`` holds scan position ``(i % TM_W) K + i // TM_W``, K = BLOCK_T / TM_W."""
    col = tl.arange(0, BLOCK_T)
    if TM_W > 0:
        K: tl.constexpr = BLOCK_T // TM_W
        col = (col % TM_W) * K + col // TM_W
    return tl.cast(seg, tl.int64) * SEG + tl.cast(i, tl.int64) * BLOCK_T + col.to(tl.int64)[None, :]


# --- single pass: decoupled look-back ---------------------------------------------------
#
# PHASE 3 reads every input once. Programs take tickets from an atomic counter, so the
# segment a program owns is fixed by the order programs start, not by their id: the
# segments first in scan order are taken first, and a program only ever waits for
# programs that already run (no deadlock whatever the scheduler does). Each program scans
# its one-chunk segment, publishes the segment's aggregate map (flag 1), walks back over
# the segments before it in scan order, a window of W at a time (W = S_BLOCK, the
# kernels' summary width, unused otherwise in PHASE 3), composing aggregates until it
# meets an inclusive value (flag 2), then publishes its own inclusive value and writes
# its outputs. Flags
# live in ``state[1 + row * n_segs + seg]`` (``state[0]`` is the ticket counter), zeroed
# by the launcher for every call.


@triton.jit
def program_tile(R, T, SEG, state_ptr, BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr, PHASE: tl.constexpr,
                 REVERSE: tl.constexpr, TIME_MAJOR: tl.constexpr, FLAT: tl.constexpr = False,
                 SEG_FLIP: tl.constexpr = False, TM_LANES: tl.constexpr = False):
    """(rows [BN, 1] int64, segment, number of segments, chunks in the segment) of this program.

    SEG_FLIP (``launch._SEG_FLIP``): PHASE 2 takes the segments in the opposite order to
    PHASE 1's. Programs start roughly in launch order (grid axis 1 is the segment), so
    PHASE 2 then begins with the segments PHASE 1 read last, whose inputs may still be in
    L2 (50 MB on an H200); the passes need no order (the carry-in comes from PHASE 1's
    summaries).

    FLAT (``GROUP_TILES = 3``, see :func:`chunk_tile`): the rows of each group of 4 steps,
    [1, BN * BT / 4], the program's rows one after another.

    TIME_MAJOR: the rows are told to be contiguous in runs of 4 only. Triton picks each
    access's layout from that contiguity: 4 rows per thread (one 16-byte access of float32,
    4 bytes of bool flags alike), the lanes along rows as far as ``BLOCK_N`` goes (8 of
    them for the 32 rows of ``launch.plan_time_major``), the other lanes and the warps
    along time, each thread holding 4 steps. Told the full contiguity, the byte-wide flags
    take 16 rows per thread and push lanes along time. Values read per row must keep that
    layout: see :func:`next_state_values` for ``last_value``.

    TM_LANES (time-major lanes tiles, ``GROUP_TILES = 5``): the rows are told to be
    contiguous in runs of ``BLOCK_N / 32``, so that each access takes that many rows a
    thread and all 32 lanes along rows, leaving the warps for the time axis (told the full
    contiguity, Triton makes 16-byte accesses and puts some lanes along time)."""
    n_segs = tl.cdiv(T, SEG)
    if PHASE == 3:
        ticket = tl.atomic_add(state_ptr, 1)
        rb = ticket // n_segs
        k = ticket % n_segs
        if REVERSE:
            seg = n_segs - 1 - k
        else:
            seg = k
    else:
        rb = tl.program_id(0)
        seg = tl.program_id(1)
        if SEG_FLIP and PHASE == 2:
            seg = n_segs - 1 - seg
    if FLAT:
        NGR: tl.constexpr = BLOCK_T // 4
        rows = tl.cast(rb, tl.int64) * BLOCK_N + (tl.arange(0, BLOCK_N * NGR) // NGR).to(tl.int64)[None, :]
    else:
        ar = tl.arange(0, BLOCK_N)
        if TM_LANES:
            # (fewer than 32 rows: contiguity 1, so that Triton 3.6 still gives the rows the
            # first lanes, BLOCK_N of them, and time the rest; launch._tm_groups)
            ar = tl.max_contiguous(ar, max(1, BLOCK_N // 32))
        elif TIME_MAJOR:
            ar = tl.max_contiguous(ar, 4)
        rows = tl.cast(rb, tl.int64) * BLOCK_N + ar.to(tl.int64)[:, None]
    seg_len = tl.minimum(SEG, T - tl.cast(seg, tl.int64) * SEG)
    return rows, seg, n_segs, tl.cdiv(seg_len, BLOCK_T)


@triton.jit
def grid_dependency(PHASE: tl.constexpr, PDL: tl.constexpr):
    """The two passes of a time split as a programmatic dependent launch (``launch._PDL``,
    sm_90 and newer): PHASE 1 lets PHASE 2's programs launch as soon as all of its own
    have started (``griddepcontrol.launch_dependents``), so PHASE 2's launch and the start
    of its programs overlap PHASE 1's work; PHASE 2, launched with the programmatic stream
    serialisation attribute, waits here (``griddepcontrol.wait``) until PHASE 1 has
    completed and its summaries are visible, before any load. Both instructions are no-ops
    in a launch without the attribute. Inline PTX, as Triton's own ``gdc_wait`` (not in
    every Triton this package supports); the CPU interpreter never takes it."""
    if PDL:
        if PHASE == 1:
            tl.inline_asm_elementwise("griddepcontrol.launch_dependents; // $0", "=r", [], dtype=tl.int32,
                                      is_pure=False, pack=1)
        elif PHASE == 2:
            grid_wait()


@triton.jit
def grid_wait():
    """``griddepcontrol.wait``: until the grid this one depends on (launched before it with
    programmatic stream serialisation) has completed and its memory is visible; nothing in a
    plain launch. Not in the CPU interpreter."""
    tl.inline_asm_elementwise("griddepcontrol.wait; // $0", "=r", [], dtype=tl.int32, is_pure=False, pack=1)


@triton.constexpr_function
def segment_zero(PHASE, BLOCK_T, TIME_MAJOR, TILE):
    """Whether a kernel takes its segment as the constant 0 rather than its program's index
    along grid axis 1 (``seg = 0`` after :func:`program_tile`; the backward kernels in
    :func:`segment_setup`, the forward kernel at its start): a single pass (PHASE 0: one
    segment, so axis 1 is one wide and the index is 0 anyway) of a batch-major tile of at most
    8 steps that the kernel's own gate ``TILE`` admits. Said so, the chunk's first step is the
    constant 0 rather than ``seg * SEG``, and SEG (8 or less), which Triton does not see
    divisible by 16, no longer costs these tiles their vector accesses: the lanes tiles of
    8-step rows (GAE [32, 8] on one warp, Triton 3.6) took scalar loads and 11 layout
    conversions without it, the tiny tiles 2 elements a thread in scalar loads. SASS a thread,
    Triton 3.6, without -> with: GAE [32, 8] on 4 warps 264 -> 208, V-trace 376 -> 304, Retrace
    336 -> 264, traces [32, 8] on 4 warps 168 -> 112, prefix sums 160 -> 112. H200
    (benchmarks/ab.py, 2026-12-04-h200-s40-ab-seg0-ungated.txt, every tile of at most 8 steps;
    -ab-seg0.txt, as gated), us: V-trace 4096 x 8 2.0 -> 1.8 in both, Retrace 1.9 -> 1.7 and
    1.8 -> 1.8; traces 32768 x 8 2.1 -> 1.9, 32768 x 6 2.0 -> 1.9; prefix sums 2.0 -> 1.9, 2.0
    -> 1.8. The gates (``TILE``) keep it from what read slower with it: the backward kernels
    take it on 8-step tiles only (their 4-step tiles and the descending tiles of rows of 5-7
    steps read 0.1-0.2 slower: Retrace 32768 x 4 2.1 -> 2.3, GAE 32768 x 6 2.4 -> 2.5), the
    forward kernel on every tile of at most 8 steps but its time-major lanes tiles; longer
    tiles have a SEG divisible by 16 already (and Retrace's lanes tiles read 0.2 slower at
    32768 x 16 and 16384 x 32 with it), and time-major tiles read 0.1-0.2 slower (time-major
    GAE 32768 x 8 2.4 -> 2.5)."""
    return PHASE == 0 and BLOCK_T <= 8 and not TIME_MAJOR and TILE


@triton.jit
def segment_setup(R, T, SEG, state_ptr, sum_a_ptr, sum_b_ptr, BLOCK_N: tl.constexpr, BLOCK_T: tl.constexpr,
                  PHASE: tl.constexpr, S_BLOCK: tl.constexpr, DT: tl.constexpr, ONE_CHUNK: tl.constexpr,
                  TIME_MAJOR: tl.constexpr, GROUP_TILES: tl.constexpr = False, PROD: tl.constexpr = False,
                  CUT: tl.constexpr = False, SEG_FLIP: tl.constexpr = False, PDL: tl.constexpr = False,
                  EXACT_T: tl.constexpr = False):
    """The start of a backward kernel: its rows and segment (:func:`program_tile`), the row
    mask, the summary strides (:func:`summary_strides`), and the carry entering the segment
    (0, or from the summaries in PHASE 2; with ONE_CHUNK, :func:`scan_step` reads the
    summaries instead, after the tile's loads). With ``GROUP_TILES = 3`` (PHASE 0, one
    chunk) the rows are per group (:func:`chunk_tile`) and the carry is a single 0.
    ``PDL``: :func:`grid_dependency` first. ``EXACT_T`` (:func:`exact_t`): the segment is the
    constant 0, as PHASE 0's grid axis 1 is one wide."""
    grid_dependency(PHASE, PDL)
    FLAT: tl.constexpr = GROUP_TILES == 3
    rows, seg, n_segs, n_chunks = program_tile(R, T, SEG, state_ptr, BLOCK_N, BLOCK_T, PHASE, True, TIME_MAJOR, FLAT,
                                               SEG_FLIP, GROUP_TILES == 5)
    if EXACT_T or segment_zero(PHASE, BLOCK_T, TIME_MAJOR, BLOCK_T == 8 and (GROUP_TILES == 4 or not GROUP_TILES)):
        # (8-step tiles in time order, the tiny tiles, or as lanes (GROUP_TILES = 4); not the
        # 4-step tiles nor the descending tiles of rows of 5-7 steps: see segment_zero)
        seg = 0
    row_mask = rows < R
    # (time-major lanes tiles: their summaries segment-major too, read along the rows)
    s_sr, s_ss = summary_strides(R, n_segs, TIME_MAJOR or GROUP_TILES == 5)
    carry = tl.zeros([rows.shape[0]], DT)
    if PHASE == 2:
        if not ONE_CHUNK:
            carry = segment_carry_in(sum_a_ptr, sum_b_ptr, s_sr, s_ss, rows, row_mask, seg, n_segs, carry, True,
                                     S_BLOCK, TIME_MAJOR, PROD, CUT)
    return rows, row_mask, seg, n_segs, n_chunks, carry, s_sr, s_ss


@triton.jit
def lookback_carry(state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg, n_segs, agg_a, agg_b, init,
                   REVERSE: tl.constexpr, W: tl.constexpr, CUT: tl.constexpr = False):
    """Publish this segment's aggregate map (agg_a, agg_b) [BN], look back for the carry
    entering it, publish the inclusive value, and return the carry [BN].

    The look-back reads a window of ``W`` predecessors at once (flags, then their maps):
    with k the nearest one that has published its inclusive value and every one before it
    its aggregate, the carry is the composition of those aggregates applied to that value;
    with no inclusive value in the window (but every aggregate there) it composes the whole
    window and moves W segments further back; otherwise it re-reads the window. One round
    trip covers W segments, so a program is not held up by a chain of predecessors.
    """
    off = rows * n_segs + seg  # [BN, 1]
    first = seg == n_segs - 1 if REVERSE else seg == 0
    if first:
        carry = init
    else:
        tl.store(agg_a_ptr + off, agg_a[:, None], mask=row_mask)
        tl.store(agg_b_ptr + off, agg_b[:, None], mask=row_mask)
        tl.atomic_xchg(state_ptr + 1 + off, tl.full(off.shape, 1, tl.int32), mask=row_mask, sem="release")
        step = 1 if REVERSE else -1
        ks = W - tl.arange(0, W)[None, :]  # [1, W]: how far back, farthest first (scan order)
        acc_a = tl.zeros(agg_a.shape, agg_a.dtype)  # composition of the windows passed
        acc_b = tl.full(agg_a.shape, 1.0, agg_a.dtype)
        carry = tl.zeros(agg_a.shape, agg_a.dtype)
        done = tl.sum(row_mask.to(tl.int32), axis=1) == 0  # [BN]
        base = seg + tl.zeros(off.shape, tl.int32)  # [BN, 1]: window starts after this segment
        while tl.sum((done == 0).to(tl.int32)) > 0:
            js = base + step * ks  # [BN, W]
            if REVERSE:
                inside = js < n_segs
            else:
                inside = js >= 0
            live = (done == 0)[:, None] & inside
            oj = rows * n_segs + js
            f = tl.atomic_add(state_ptr + 1 + oj, tl.zeros(js.shape, tl.int32), mask=live, sem="acquire")
            # beyond the first segment in scan order nothing is needed: count it as inclusive
            f = tl.where(live, f, 2)
            k_inc = tl.min(tl.where(f == 2, ks, W + 1), axis=1)  # [BN], W + 1: none in the window
            before = ks < k_inc[:, None]
            ready = tl.sum((before & (f == 0)).to(tl.int32), axis=1) == 0
            a_j = tl.load(agg_a_ptr + oj, mask=live & before, other=0.0, volatile=True)
            b_j = tl.load(agg_b_ptr + oj, mask=live & before, other=1.0, volatile=True)
            x_j = tl.load(incl_ptr + oj, mask=live & (ks == k_inc[:, None]), other=0.0, volatile=True)
            # each map applied after the ones further back: the last column of a forward scan
            ta, tb = scan_maps(a_j, b_j, False, CUT)
            win_a = last_column(ta)
            win_b = last_column(tb)
            new_a = madd(acc_a, acc_b, win_a, CUT)
            new_b = acc_b * win_b
            found = (done == 0) & ready & (k_inc <= W)
            advance = (done == 0) & ready & (k_inc > W)
            carry = tl.where(found, madd(new_a, new_b, tl.sum(x_j, axis=1), CUT), carry)
            acc_a = tl.where(advance, new_a, acc_a)
            acc_b = tl.where(advance, new_b, acc_b)
            base = tl.where(advance[:, None], base + step * W, base)
            done = done | found
    incl = madd(agg_a, agg_b, carry, CUT)
    tl.store(incl_ptr + off, incl[:, None], mask=row_mask)
    tl.atomic_xchg(state_ptr + 1 + off, tl.full(off.shape, 2, tl.int32), mask=row_mask, sem="release")
    return carry


# --- single pass: every program resident, one grid barrier ----------------------------
#
# PHASE 4 reads every input once too, when all the programs of a split fit on the GPU at
# once (the launch is cooperative: the driver refuses a grid that cannot be resident, so
# the barrier cannot deadlock). Each program loads and scans its one-chunk segment from a
# zero carry, stores the segment's composed map where PHASE 1 would, and waits at a grid
# barrier; then every map is in memory, and the carry entering the segment is composed
# from them in one round trip (:func:`segment_carry_in`), with no chain of waits between
# programs as in the look-back. PHASE 5 is PHASE 4 without the barrier, for the CPU
# interpreter, which runs programs one after another: the launcher issues it twice, the
# first launch storing every map, the second composing the carries from them.


# Poll the arrivals with plain acquire loads (inline PTX) instead of atomic adds of 0: a
# load does not queue behind the other programs' atomics at the counter's L2 slice.
BARRIER_POLL_LOAD = tl.constexpr(False)


@triton.jit
def _load_acquire(ptr):
    return tl.inline_asm_elementwise("ld.acquire.gpu.global.b32 $0, [$1];", "=r,l", [ptr], dtype=tl.int32,
                                     is_pure=False, pack=1)


@triton.jit
def grid_barrier(state_ptr):
    """Wait until every program of the grid has arrived here. ``state_ptr``: two int32
    counters, 0 before the launch and left 0 after it: arrivals, then departures; the last
    program to leave resets both, so the same counters serve the next launch on the stream.

    The scalar atomics run on one thread of the program (Triton broadcasts their result);
    the thread barriers around them order the other threads' stores before the arrival
    (release) and their later loads after the wait (acquire), as a cooperative-groups grid
    sync does."""
    n = tl.num_programs(0) * tl.num_programs(1)
    tl.debug_barrier()
    seen = tl.atomic_add(state_ptr, 1, sem="acq_rel", scope="gpu") + 1
    while seen < n:
        if BARRIER_POLL_LOAD:
            seen = _load_acquire(state_ptr)
        else:
            seen = tl.atomic_add(state_ptr, 0, sem="acquire", scope="gpu")
    tl.debug_barrier()
    left = tl.atomic_add(state_ptr + 1, 1, sem="acq_rel", scope="gpu") + 1
    if left == n:  # every program is past the wait: nobody reads the arrivals any more
        tl.atomic_xchg(state_ptr, 0, sem="relaxed", scope="gpu")
        tl.atomic_xchg(state_ptr + 1, 0, sem="relaxed", scope="gpu")


@triton.jit
def barrier_carry(state_ptr, agg_a_ptr, agg_b_ptr, rows, row_mask, seg, n_segs, agg_a, agg_b, init,
                  PHASE: tl.constexpr, REVERSE: tl.constexpr, W: tl.constexpr, CUT: tl.constexpr = False):
    """PHASE 4 (and 5): store this segment's map (agg_a, agg_b) [BN] at ``row * n_segs +
    seg``, wait for every program (PHASE 4), and return the carry [BN] entering the segment:
    the maps of the segments before it in scan order composed and applied to ``init``
    (``W`` >= n_segs - 1 columns, :func:`segment_carry_in`'s sum of products)."""
    off = rows * n_segs + seg  # [BN, 1]
    tl.store(agg_a_ptr + off, agg_a[:, None], mask=row_mask)
    tl.store(agg_b_ptr + off, agg_b[:, None], mask=row_mask)
    if PHASE == 4:
        grid_barrier(state_ptr)
    return segment_carry_in(agg_a_ptr, agg_b_ptr, n_segs, 1, rows, row_mask, seg, n_segs, init, REVERSE, W, False,
                            True, CUT)


@triton.jit
def one_pass_carry(state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg, n_segs, agg_a, agg_b, init,
                   PHASE: tl.constexpr, REVERSE: tl.constexpr, W: tl.constexpr, CUT: tl.constexpr = False):
    """The carry entering a one-chunk segment of a single-pass split: by look-back (PHASE 3,
    :func:`lookback_carry`) or after a grid barrier (PHASE 4 and 5, :func:`barrier_carry`)."""
    if PHASE == 3:
        return lookback_carry(state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg, n_segs, agg_a, agg_b,
                              init, REVERSE, W, CUT)
    else:
        return barrier_carry(state_ptr, agg_a_ptr, agg_b_ptr, rows, row_mask, seg, n_segs, agg_a, agg_b, init,
                             PHASE, REVERSE, W, CUT)


@triton.jit
def group_lookback_carry(alpha, beta, init, state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg, n_segs,
                         PHASE: tl.constexpr, REVERSE: tl.constexpr, W: tl.constexpr, CUT: tl.constexpr = False):
    """PHASE 3 to 5 for a group-form tile scanned in two levels (:func:`group_scan`): the
    tile's composed map (:func:`group_map`) published and the carry entering it found by
    :func:`one_pass_carry` (``init``: the value entering the first segment in scan order)."""
    agg_a, agg_b = group_map(alpha, beta, CUT)
    return one_pass_carry(state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg, n_segs, agg_a, agg_b, init,
                          PHASE, REVERSE, W, CUT)


@triton.jit
def scan_step(alpha, beta, carry, state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, s_sr, s_ss, rows, row_mask, seg, n_segs,
              PHASE: tl.constexpr, REVERSE: tl.constexpr, W: tl.constexpr, ONE_CHUNK: tl.constexpr,
              REV: tl.constexpr = False, TIME_MAJOR: tl.constexpr = False, PROD: tl.constexpr = False,
              CUT: tl.constexpr = False, SEG_GROUPS: tl.constexpr = 0, LANES: tl.constexpr = False,
              TM_W: tl.constexpr = 0):
    """One chunk (a [BN, BT] tile in scan order, or in time order scanned in reverse with
    ``REV``): ``scan_tile`` from ``carry`` (PHASE 0/2), or, in PHASE 3, the carry found by
    look-back (``carry`` is then the value entering the first segment in scan order).
    ``REVERSE``: segments are taken from the end of the row.

    PHASE 2 with ONE_CHUNK: ``carry`` is the value entering the first segment, and the
    summaries (``agg_a_ptr``/``agg_b_ptr``, W wide) are composed into the carry-in here, so
    their loads and scan come after the tile's loads are in flight rather than before.
    ``TM_W`` > 0: a time-major lanes tile (:func:`tm_lanes_scan`; not in PHASE 3 to 5)."""
    tl.static_assert(TM_W == 0 or PHASE < 3, "time-major lanes tiles take no single-pass split")
    if PHASE == 2:
        if ONE_CHUNK:
            carry = segment_carry_in(agg_a_ptr, agg_b_ptr, s_sr, s_ss, rows, row_mask, seg, n_segs, carry, REVERSE, W,
                                     TIME_MAJOR, PROD, CUT)
    if PHASE >= 3 and len(alpha.shape) == 3:
        c = group_lookback_carry(alpha, beta, carry, state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg,
                                 n_segs, PHASE, REVERSE, W, CUT)
        return scan_tile(alpha, beta, c, False, CUT)
    elif PHASE >= 3:
        a, b = scan_maps(alpha, beta, REV, CUT)
        c = one_pass_carry(state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg, n_segs,
                           last_column(a, REV), last_column(b, REV), carry, PHASE, REVERSE, W, CUT)
        out = madd(a, b, c[:, None], CUT)
        return out, last_column(out, REV)
    else:
        return scan_tile(alpha, beta, carry, REV, CUT, SEG_GROUPS, LANES, TM_W)


@triton.jit
def scan_step_lagged(alpha, beta, carry, state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, s_sr, s_ss, rows, row_mask, seg,
                     n_segs, PHASE: tl.constexpr, REVERSE: tl.constexpr, W: tl.constexpr, ONE_CHUNK: tl.constexpr,
                     REV: tl.constexpr = False, TIME_MAJOR: tl.constexpr = False, PROD: tl.constexpr = False,
                     SEG_GROUPS: tl.constexpr = 0, LANES: tl.constexpr = False, TM_W: tl.constexpr = 0):
    """``scan_tile_lagged`` with the PHASE 3 look-back carry or the deferred PHASE 2
    carry-in (see :func:`scan_step`)."""
    tl.static_assert(TM_W == 0 or PHASE < 3, "time-major lanes tiles take no single-pass split")
    if PHASE == 2:
        if ONE_CHUNK:
            carry = segment_carry_in(agg_a_ptr, agg_b_ptr, s_sr, s_ss, rows, row_mask, seg, n_segs, carry, REVERSE, W,
                                     TIME_MAJOR, PROD)
    if PHASE >= 3 and len(alpha.shape) == 3:
        c = group_lookback_carry(alpha, beta, carry, state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg,
                                 n_segs, PHASE, REVERSE, W)
        return scan_tile_lagged(alpha, beta, c)
    elif PHASE >= 3:
        p, q, x, y = lagged_scan(alpha, beta, 1, False, REV)
        c = one_pass_carry(state_ptr, agg_a_ptr, agg_b_ptr, incl_ptr, rows, row_mask, seg, n_segs,
                           last_column(x, REV), last_column(p, REV), carry, PHASE, REVERSE, W)
        out = x + p * c[:, None]
        return out, y + q * c[:, None], last_column(out, REV)
    else:
        return scan_tile_lagged(alpha, beta, carry, REV, SEG_GROUPS, LANES, TM_W)
