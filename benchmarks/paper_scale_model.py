"""The cost model of `benchmarks/paper_scale.py`: a power law per probe kind, and for the
L-BFGS logreg fits a power law per iteration times the measured iteration count.

Why two parts for logreg: one L-BFGS iteration is a fixed number of passes over the
(N x D) design, so its cost is a smooth power law, but the number of iterations is not:
on the benchmark's features it falls from ~70 at N = 10k to ~25 at 25k and then levels off
(small N is nearly separable, so the fit runs longer). A single power law fitted through
that drop extrapolates it and under-predicts N = 50k by ~40 %. Iterations are therefore
interpolated in log N between measured sizes and held at the last measured value beyond
them (they level off, and holding them errs on the slow side).

A fit's setup (the preconditioner's Gram matrix and its factorisation, the gradient at 0) is
timed apart and not divided by the iterations: on real encoder features L-BFGS needs 5-10x
the iterations of these synthetic ones (benchmarks/real_size.py measures them on the job's
own features and swaps them in with `with_iterations`), and a setup folded into the cost per
iteration would be multiplied by that factor too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

Point = tuple[int, int, float]  # (N, D, value)


@dataclasses.dataclass(frozen=True)
class PowerLaw:
    """t = a N^alpha D^beta."""

    a: float
    alpha: float
    beta: float

    @classmethod
    def fit(cls, points: Sequence[Point]) -> PowerLaw:
        """Least squares of log t = log a + alpha log N + beta log D."""
        design = np.array([[1.0, math.log(n), math.log(d)] for n, d, _ in points])
        target = np.array([math.log(t) for _, _, t in points])
        coef, *_ = np.linalg.lstsq(design, target, rcond=None)
        return cls(math.exp(coef[0]), float(coef[1]), float(coef[2]))

    def __call__(self, n: float, d: float) -> float:
        return self.a * n**self.alpha * d**self.beta

    def describe(self) -> str:
        return f"a={self.a:.3e} alpha={self.alpha:.2f} beta={self.beta:.2f}"


def _interp_log(x: float, xs: Sequence[float], ys: Sequence[float]) -> float:
    """Piecewise linear in log x, held flat beyond the ends."""
    return float(np.interp(math.log(x), [math.log(v) for v in xs], ys))


@dataclasses.dataclass(frozen=True)
class IterativeCost:
    """t = setup(N, D) + (per-iteration power law) x iterations(N, D), iterations as measured.

    `setup` is what a fit costs before its first iteration (the preconditioner's Gram matrix
    and factorisation, the gradient at 0), timed on its own: folded into the per-iteration
    cost it would be spread over the iterations of the timing features and scale with
    iterations measured elsewhere (real features need 5-10x more, benchmarks/real_size.py).
    """

    per_iteration: PowerLaw
    iterations: tuple[Point, ...]  # (N, D, mean L-BFGS iterations)
    setup: PowerLaw | None = None
    # Beyond the largest measured N: hold the count (False; synthetic counts fall, then level
    # off) or continue the last measured segment's rise in log N (True; counts measured on real
    # features rise with N). A falling last segment is held either way.
    extend: bool = False

    @classmethod
    def fit(
        cls, times: Sequence[Point], iterations: Sequence[Point], setups: Sequence[Point] | None = None
    ) -> IterativeCost:
        its = {(n, d): it for n, d, it in iterations}
        before = {(n, d): s for n, d, s in setups or ()}
        per_iter = [(n, d, max(t - before.get((n, d), 0.0), 1e-3 * t) / max(its[(n, d)], 1.0)) for n, d, t in times]
        setup = PowerLaw.fit(setups) if setups else None
        return cls(PowerLaw.fit(per_iter), tuple(sorted(iterations)), setup)

    def with_iterations(self, iterations: Sequence[Point], extend: bool = False) -> IterativeCost:
        """The same per-iteration and setup costs, with iteration counts measured elsewhere."""
        return dataclasses.replace(self, iterations=tuple(sorted(iterations)), extend=extend)

    def iterations_at(self, n: float, d: float) -> float:
        widths = sorted({w for _, w, _ in self.iterations})
        per_width = []
        for w in widths:
            pts = sorted((m, it) for m, ww, it in self.iterations if ww == w)
            at = _interp_log(n, [m for m, _ in pts], [it for _, it in pts])
            if self.extend and len(pts) > 1 and n > pts[-1][0]:
                (n0, i0), (n1, i1) = pts[-2], pts[-1]
                rise = max(0.0, (i1 - i0) / math.log(n1 / n0))
                at = i1 + rise * math.log(n / n1)
            per_width.append(at)
        return _interp_log(d, widths, per_width)

    def __call__(self, n: float, d: float) -> float:
        before = self.setup(n, d) if self.setup is not None else 0.0
        return before + self.per_iteration(n, d) * self.iterations_at(n, d)

    def describe(self) -> str:
        table = ", ".join(f"N={n / 1000:g}k D={d}: {it:.0f}" for n, d, it in self.iterations)
        setup = f"setup {self.setup.describe()}; " if self.setup is not None else ""
        return f"{setup}per iteration {self.per_iteration.describe()}; iterations {table}"


CostModel = PowerLaw | IterativeCost


def fit_model(
    times: Sequence[Point], iterations: Sequence[Point] | None, setups: Sequence[Point] | None = None
) -> CostModel:
    return IterativeCost.fit(times, iterations, setups) if iterations else PowerLaw.fit(times)
