"""Sylvester Hadamard rows for the `hadamard` head (core/hadamard.ts), ported exactly.

H_n[i][j] = (-1)^popcount(i & j), so no matrix is ever stored; the d columns kept are frost's
seeded choice, which keeps every word's row distinct even when |V| > d.
"""

import torch

from .seeded_random import SeededRandom


def hadamard_order(rows: int, cols: int) -> int:
    """n = 2^ceil(log2 max(rows, cols))."""
    n = 1
    while n < max(rows, cols):
        n *= 2
    return n


def choose_hadamard_columns(n: int, d: int, seed: int) -> list:
    """The d columns of H_n the head keeps: every single-bit column, then a seeded shuffle of the others.

    Hoffer et al. keep the first d columns, whose rows repeat with period d once |V| > d; the
    single-bit columns read out the bits of the row number, so all n rows differ (core/hadamard.ts).
    """
    bits = n.bit_length() - 1
    if n < 1 or (1 << bits) != n:
        raise ValueError(f"'n' must be a power of two, got {n}")
    if d < bits:
        raise ValueError(f"'d' ({d}) must be at least log2(n) = {bits} for distinct rows")
    if d > n:
        raise ValueError(f"'d' ({d}) must not exceed n ({n})")
    chosen = [1 << b for b in range(bits)]
    taken = set(chosen)
    others = [j for j in range(1, n) if j not in taken]
    SeededRandom(seed, "hadamard-columns").shuffle(others)
    # Column 0 (all ones) says nothing about the word; it is kept only when every other one is.
    if d > n - 1:
        others.append(0)
    for j in others:
        if len(chosen) >= d:
            break
        chosen.append(j)
    return chosen


def hadamard_rows(rows: int, columns: list) -> torch.Tensor:
    """The float32 [rows, len(columns)] matrix of entries H_n[i][columns[k]] = ±1."""
    x = torch.arange(rows, dtype=torch.int64).unsqueeze(1) & torch.tensor(columns, dtype=torch.int64)
    # Parity of popcount(x) by folding halves, as frost's hadamardEntry does.
    for shift in (16, 8, 4, 2, 1):
        x = x ^ (x >> shift)
    return (1 - 2 * (x & 1)).to(torch.float32)
