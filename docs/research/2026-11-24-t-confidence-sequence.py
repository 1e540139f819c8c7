"""Anytime-valid confidence sequence for the mean of i.i.d. Gaussian-ish data,
unknown variance (scale-invariant normal mixture; Lai 1976; Lindon et al. 2022/24;
Perez-Ortiz et al. 2024).  Standard library only."""

import math


def t_cs(n: int, mean: float, ss: float, alpha: float = 0.05, g: float = 1.0):
    """Two-sided (1-alpha) confidence sequence for mu at sample size n.

    n    : number of observations so far (>= 1)
    mean : sample mean
    ss   : sum of squared deviations from the mean, sum (x_i - mean)^2
    g    : prior variance of the standardized effect delta = mu / sigma
           (mixture N(0, g)); g=1 ~ tuned for |delta| ~ 1..2 at n ~ 5..20.
    Returns (lo, hi); (-inf, inf) while the data cannot yet exclude anything.

    E-process for H0: mu = m, with d = mean - m, r = n d^2 / ss, c = 1 + n g:
        Lambda_n(m) = c^{-1/2} * ((1 + r) / (1 + r / c)) ** (n / 2)
    Lambda_n(m) is a test martingale under H0 (w.r.t. the scale-invariant
    filtration), so by Ville P(exists n: Lambda_n(mu) >= 1/alpha) <= alpha.
    CS_n = {m : Lambda_n(m) < 1/alpha} = mean -/+ sqrt(r* ss / n).
    """
    if n < 2 or ss <= 0.0:
        return (-math.inf, math.inf)
    c = 1.0 + n * g
    # Lambda >= 1/alpha  <=>  (1+r)/(1+r/c) >= K
    logK = (2.0 / n) * (0.5 * math.log(c) - math.log(alpha))
    if logK >= math.log(c):  # sup_r Lambda = c^{(n-1)/2} < 1/alpha
        return (-math.inf, math.inf)
    K = math.exp(logK)
    r_star = (K - 1.0) / (1.0 - K / c)
    half = math.sqrt(r_star * ss / n)
    return (mean - half, mean + half)


class RunningTCS:
    """Feed observations one by one; keeps the running intersection."""

    def __init__(self, alpha=0.05, g=1.0):
        self.alpha, self.g = alpha, g
        self.n, self.mean, self.ss = 0, 0.0, 0.0
        self.lo, self.hi = -math.inf, math.inf

    def update(self, x: float):
        self.n += 1  # Welford
        d = x - self.mean
        self.mean += d / self.n
        self.ss += d * (x - self.mean)
        lo, hi = t_cs(self.n, self.mean, self.ss, self.alpha, self.g)
        self.lo, self.hi = max(self.lo, lo), min(self.hi, hi)  # still a valid CS
        return self.lo, self.hi


def decide(lo, hi, min_effect_pct=5.0):
    """lo/hi on log-ratio scale. 'faster'/'slower' = separation, 'tie' = CS
    inside +/- log(1+e); None = keep measuring."""
    e = math.log1p(min_effect_pct / 100.0)
    if lo > 0:
        return "A>B"
    if hi < 0:
        return "A<B"
    if -e < lo and hi < e:
        return "tie"
    return None
