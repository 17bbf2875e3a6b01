"""frost's seeded, counter-based generator (core/random.ts), ported bit for bit.

Value i of stream `key` is fmix32((i * GOLDEN) ^ key), so a frozen matrix is a pure function of
(seed, stream name, shape): it is regenerated here instead of being stored or shipped. Scalars are
plain Python ints (exact); whole matrices are int64 tensors holding uint32 values, masked after
every step. Float steps are float32 tensor ops, one IEEE rounding each, which equals what frost's
Math.fround(double op) gives (double rounding through float64 is innocuous for + - * / sqrt).
"""

import math

import torch

MASK = 0xFFFFFFFF
#: 2^32 / phi: spreads consecutive counters over the whole uint32 range before mixing.
GOLDEN = 0x9E3779B1
#: MurmurHash3's fmix32 multipliers.
FMIX_M1 = 0x85EBCA6B
FMIX_M2 = 0xC2B2AE35
TWO_POW_M24 = 2.0**-24
TWO_POW_M53 = 2.0**-53
# Counters per tensor chunk: bounds the int64 temporaries for large matrices (8 bytes a counter).
CHUNK = 1 << 20


def fmix32(h: int) -> int:
    """MurmurHash3's 32-bit finaliser on a Python int (core/random.ts fmix32)."""
    h &= MASK
    h ^= h >> 16
    h = (h * FMIX_M1) & MASK
    h ^= h >> 13
    h = (h * FMIX_M2) & MASK
    h ^= h >> 16
    return h


def stream_key(seed: int, stream: str = "") -> int:
    """The key of stream `stream` under `seed` (core/random.ts streamKey)."""
    if not isinstance(seed, int) or isinstance(seed, bool) or seed < 0 or seed > MASK:
        raise ValueError(f"'seed' must be an integer in [0, 2^32), got {seed!r}")
    h = fmix32(seed ^ 0x5BD1E995)
    # JavaScript's charCodeAt reads UTF-16 code units, so a name outside the BMP hashes as its two surrogates.
    units = stream.encode("utf-16-le")
    for k in range(0, len(units), 2):
        unit = units[k] | (units[k + 1] << 8)
        h = fmix32(h ^ ((unit * GOLDEN) & MASK))
    return h


def hash_at(key: int, i: int) -> int:
    """uint32 hash of counter i in stream `key`."""
    return fmix32((((i & MASK) * GOLDEN) & MASK) ^ key)


def _mul32(x: torch.Tensor, m: int) -> torch.Tensor:
    """(x * m) mod 2^32 for uint32 values in int64: x * m can pass 2^63, so multiply by m's 16-bit halves."""
    lo = x * (m & 0xFFFF)
    hi = (x * (m >> 16)) & 0xFFFF
    return (lo + (hi << 16)) & MASK


def fmix32_tensor(h: torch.Tensor) -> torch.Tensor:
    """fmix32 over an int64 tensor of uint32 values."""
    h = h ^ (h >> 16)
    h = _mul32(h, FMIX_M1)
    h = h ^ (h >> 13)
    h = _mul32(h, FMIX_M2)
    return h ^ (h >> 16)


def hash_range(key: int, start: int, stop: int) -> torch.Tensor:
    """hash_at(key, i) for i in [start, stop), as int64."""
    i = torch.arange(start, stop, dtype=torch.int64) & MASK
    return fmix32_tensor(_mul32(i, GOLDEN) ^ key)


def uniform_matrix(key: int, rows: int, cols: int, lo: float, hi: float) -> torch.Tensor:
    """[rows, cols] float32 uniform in [lo, hi), element (r, c) from counter r*cols + c (core/random.ts)."""
    size = rows * cols
    if size > MASK:
        raise ValueError(f"matrix of {rows}x{cols} exceeds the 2^32 counter range")
    # frost rounds hi - lo and lo to float32 once; each cell is then fround(fround(u * span) + low).
    span = torch.tensor(hi - lo, dtype=torch.float32)
    low = torch.tensor(lo, dtype=torch.float32)
    out = torch.empty(size, dtype=torch.float32)
    for start in range(0, size, CHUNK):
        stop = min(size, start + CHUNK)
        # The top 24 bits of the hash times 2^-24: exact in float32.
        u = (hash_range(key, start, stop) >> 8).to(torch.float32) * TWO_POW_M24
        out[start:stop] = u * span + low
    return out.reshape(rows, cols)


def l2_normalise_rows(m: torch.Tensor) -> torch.Tensor:
    """Each row over its L2 norm, the sum of squares accumulated in float32 left to right, as frost does.

    torch.sum would add in another order (pairwise, vectorised) and could differ in the last bit,
    so the columns are added one at a time, across all rows at once.
    """
    m = m.to(torch.float32)
    ss = torch.zeros(m.shape[0], dtype=torch.float32)
    for c in range(m.shape[1]):
        v = m[:, c]
        ss = ss + v * v
    return m / torch.sqrt(ss).unsqueeze(1)


class SeededRandom:
    """A sequential generator over one counter stream (core/random.ts SeededRandom), in pure Python."""

    def __init__(self, seed: int = 0, stream: str = "", counter: int = 0):
        self.key = stream_key(seed, stream)
        self.counter = counter

    def fork(self, stream: str) -> "SeededRandom":
        """A child generator whose draws are independent of this one's."""
        child = SeededRandom(0, "", 0)
        child.key = fmix32(self.key ^ stream_key(0, stream))
        return child

    def next_uint32(self) -> int:
        value = hash_at(self.key, self.counter)
        self.counter += 1
        return value

    def next(self) -> float:
        """Uniform float in [0, 1) with 53 random bits."""
        hi = self.next_uint32() >> 5
        lo = self.next_uint32() >> 6
        return (hi * 67108864 + lo) / 9007199254740992

    def int(self, n: int) -> int:
        """Uniform integer in [0, n)."""
        return math.floor(self.next() * n)

    def shuffle(self, items: list) -> list:
        """Fisher-Yates in place, drawing exactly as frost's does."""
        for i in range(len(items) - 1, 0, -1):
            j = self.int(i + 1)
            items[i], items[j] = items[j], items[i]
        return items

    def uniform_tensor(self, size: int) -> torch.Tensor:
        """The next `size` draws of next() as a float64 tensor (advances the counter by 2 * size)."""
        start = self.counter
        self.counter += 2 * size
        out = torch.empty(size, dtype=torch.float64)
        for s in range(0, size, CHUNK):
            e = min(size, s + CHUNK)
            h = hash_range(self.key, start + 2 * s, start + 2 * e).reshape(-1, 2)
            # hi * 2^26 + lo < 2^53: exact in int64 and in float64, as in frost's double arithmetic.
            out[s:e] = ((h[:, 0] >> 5) * 67108864 + (h[:, 1] >> 6)).to(torch.float64) * TWO_POW_M53
        return out
