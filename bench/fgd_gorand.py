"""Go's ``math/rand`` (the seeded global generator the published FGD simulator draws from),
replayed in Python, so single seeds of ``aiplat sim fgd`` can be compared with the
simulator's own per-seed results.

Written from Go's ``src/math/rand/rng.go`` and ``rand.go`` (an additive lagged Fibonacci
generator, 607 words, tap 273, seeded through a Lehmer generator XORed with a table of 607
precomputed words). The table is read from the local Go installation's source at run time
(``go env GOROOT``): it is data no procedure here could recompute, and nothing of it is
copied into this repository. The order of draws is the simulator's
(``pkg/simulator/core.go`` ``Simulate``): ``rand.Seed``, one ``rand.Int()`` for a debug log
line, ``Shuffle`` of the name-sorted pods, ``Intn`` per tuned pod, ``Perm`` of the nodes.
"""

from __future__ import annotations

import re
import subprocess
from functools import cache
from pathlib import Path

import numpy as np

MASK64 = (1 << 64) - 1
LEN, TAP = 607, 273
INT32MAX = (1 << 31) - 1
INT63MAX = (1 << 63) - 1
SCHEDULER_START_DRAWS = 10
BLOCK = 4096  # draws made at a time


@cache
def cooked() -> tuple[int, ...]:
    """``rngCooked`` from the installed Go's ``src/math/rand/rng.go``."""
    root = subprocess.run(["go", "env", "GOROOT"], capture_output=True, text=True,
                          check=True).stdout.strip()
    text = (Path(root) / "src" / "math" / "rand" / "rng.go").read_text()
    body = text[text.index("rngCooked [rngLen]int64"):]
    body = body[body.index("{") + 1:body.index("}")]
    values = tuple(int(v) for v in re.findall(r"-?\d+", body))
    if len(values) != LEN:
        raise RuntimeError(f"rng.go: {len(values)} cooked values, expected {LEN}")
    return values


def _seedrand(x: int) -> int:
    hi, lo = divmod(x, 44488)
    x = 48271 * lo - 3399 * hi
    return x + INT32MAX if x < 0 else x


class GoRand:
    """``rand.New(rand.NewSource(seed))``; only what the simulator calls."""

    name = "go-math-rand"

    def __init__(self, seed: int, *, simulator_prelude: bool = True) -> None:
        table = cooked()
        seed %= INT32MAX
        if seed == 0:
            seed = 89482311
        x = seed
        self.vec = [0] * LEN
        for i in range(-20, LEN):
            x = _seedrand(x)
            if i >= 0:
                u = (x << 40) & MASK64
                x = _seedrand(x)
                u ^= (x << 20) & MASK64
                x = _seedrand(x)
                u ^= x
                u ^= table[i] & MASK64
                self.vec[i] = u
        # the seeded words in draw order: o[m] = vec[(-TAP - m) % LEN], m = -606..0
        self._last = np.array([self.vec[(-TAP - m) % LEN] for m in range(-LEN + 1, 1)],
                              dtype=np.uint64)
        self._buf: list[int] = []
        self._pos = 0
        self.before_perm = 0
        if simulator_prelude:
            self.int63()  # core.go: log.Debugf(..., rand.Int()) evaluates its argument
            # the scheduler started by RunCluster draws 10 times from the global generator
            # before the nodes get their random prefixes (found against simon's own log:
            # with 10 skipped draws the node prefixes and placements match it)
            self.before_perm = SCHEDULER_START_DRAWS

    def uint64(self) -> int:
        pos = self._pos
        if pos == len(self._buf):
            self._refill()
            pos = 0
        self._pos = pos + 1
        return self._buf[pos]

    def _refill(self) -> None:
        """The next ``BLOCK`` draws at once. Go's step (tap and feed both step back round
        the 607 words, ``vec[feed] += vec[tap]``) makes the draws the lagged Fibonacci
        sequence o[k] = o[k-607] + o[k-273] (mod 2**64), the words as they were seeded
        standing for o[-606..0]: numpy adds 273 of them at a time (uint64 wraps as Go's)."""
        out = np.empty(LEN + BLOCK, dtype=np.uint64)
        out[:LEN] = self._last
        for k in range(LEN, LEN + BLOCK, TAP):
            end = min(k + TAP, LEN + BLOCK)
            np.add(out[k - LEN:end - LEN], out[k - TAP:end - TAP], out=out[k:end])
        self._last = out[BLOCK:]
        self._buf = out[LEN:].tolist()

    def int63(self) -> int:
        return self.uint64() & INT63MAX

    def int31(self) -> int:
        return (self.uint64() & INT63MAX) >> 32

    def int31n(self, n: int) -> int:
        """``Rand.Int31n`` (what ``Intn`` calls)."""
        draw = self.uint64
        if n & (n - 1) == 0:
            return ((draw() & INT63MAX) >> 32) & (n - 1)
        top = INT32MAX - (1 << 31) % n
        v = (draw() & INT63MAX) >> 32
        while v > top:
            v = (draw() & INT63MAX) >> 32
        return v % n

    def _int31n_lemire(self, n: int) -> int:
        """``Rand.int31n`` (what ``Shuffle`` calls)."""
        v = (self.uint64() & INT63MAX) >> 31
        prod = v * n
        low = prod & 0xFFFFFFFF
        if low < n:
            thresh = ((1 << 32) - n) % n
            while low < thresh:
                v = (self.uint64() & INT63MAX) >> 31
                prod = v * n
                low = prod & 0xFFFFFFFF
        return prod >> 32

    # --- aiplat.sched.fgd_protocol.Draws

    def below(self, n: int) -> int:
        return self.int31n(n)

    def perm(self, n: int) -> list[int]:
        if self.before_perm:  # simulator.go RunCluster: runScheduler() starts first
            for _ in range(self.before_perm):
                self.int63()
            self.before_perm = 0
        m = [0] * n
        for i in range(n):
            j = self.int31n(i + 1)
            m[i] = m[j]
            m[j] = i
        return m

    def shuffle_order(self, n: int) -> list[int]:
        order = list(range(n))
        for i in range(n - 1, 0, -1):
            j = self._int31n_lemire(i + 1)
            order[i], order[j] = order[j], order[i]
        return order
