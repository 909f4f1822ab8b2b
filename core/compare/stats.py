"""Statistical tests between runs: McNemar's paired test on per-text correctness."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.stats import binomtest, chi2

from core.runs import Registry


@dataclass(frozen=True)
class McNemar:
    only_a: int  # texts run A got right and run B wrong
    only_b: int
    both: int
    neither: int
    p_value: float
    exact: bool

    def verdict(self, a: str, b: str, alpha: float = 0.05) -> str:
        if self.only_a + self.only_b == 0:
            return f"{a} and {b} are right and wrong on exactly the same texts: no difference to test."
        better, worse = (a, b) if self.only_a > self.only_b else (b, a)
        if self.p_value < alpha:  # of these two runs on these texts: not of the methods over seeds (Compare's groups)
            return (f"{better} is significantly more accurate than {worse} on this test set "
                    f"(p = {self.p_value:.4f} < {alpha}). This compares these two runs, one labeled draw and "
                    "initialisation each, over the test texts; whether the method leads is for the seeds to tell "
                    "(groups and verdicts above).")
        return (f"No significant difference between {a} and {b} (p = {self.p_value:.4f} ≥ {alpha}): "
                f"they disagree on {self.only_a + self.only_b} texts, too few or too evenly split to tell.")


def mcnemar(correct_a: np.ndarray, correct_b: np.ndarray) -> McNemar:
    """McNemar's paired test on per-text correctness: exact binomial below 25 discordant pairs,
    else the chi-squared statistic with continuity correction."""
    a, b = np.asarray(correct_a, bool), np.asarray(correct_b, bool)
    if a.shape != b.shape:
        raise ValueError("McNemar needs both runs' predictions on the same test texts")
    only_a, only_b = int((a & ~b).sum()), int((~a & b).sum())
    n = only_a + only_b
    if n == 0:
        p, exact = 1.0, True
    elif n < 25:
        p, exact = float(binomtest(only_a, n, 0.5).pvalue), True
    else:
        p, exact = float(chi2.sf((abs(only_a - only_b) - 1) ** 2 / n, df=1)), False
    return McNemar(only_a, only_b, int((a & b).sum()), int((~a & ~b).sum()), p, exact)


def paired_test(registry: Registry, run_a: str, run_b: str) -> McNemar:
    """McNemar between two finished runs, matched on test text ids. A run restored from a record of its
    metrics (or whose files were removed) kept no per-text predictions: a ValueError names it."""
    missing = [r for r in (run_a, run_b) if not registry.folder(r).has_predictions()]
    if missing:
        raise ValueError(f"{'runs' if len(missing) > 1 else 'run'} {' and '.join(missing)} kept no per-text test "
                         "predictions (restored from a record of metrics, or files removed); McNemar's test needs them")
    pa, pb = registry.folder(run_a).predictions(), registry.folder(run_b).predictions()
    merged = pa.merge(pb, on="id", suffixes=("_a", "_b"))
    if len(merged) != len(pa) or len(merged) != len(pb):
        raise ValueError("the two runs were tested on different texts; McNemar needs the same test set")
    if (relabeled := int((merged["label_a"] != merged["label_b"]).sum())):  # TREC's coarse and fine classes
        raise ValueError(f"the two runs were tested on the same texts with other labels ({relabeled:,} of "
                         f"{len(merged):,} differ: two tasks, such as coarse and fine classes); McNemar compares two "
                         "models on one task")
    return mcnemar(merged["pred_a"] == merged["label_a"], merged["pred_b"] == merged["label_b"])
