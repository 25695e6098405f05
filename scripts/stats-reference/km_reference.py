"""Reference values for the ehds-stats tests (crates/stats).

Prints
  1. the Kaplan-Meier survival function and its 95% confidence interval
     (Greenwood variance, log(-log) transform) computed by lifelines'
     KaplanMeierFitter on a fixed small data set, at every point of the time
     grid 0..13 that the Rust test declares;
  2. quantiles computed by numpy with method="hazen" (Hyndman & Fan type 5) for
     a fixed set of distinct consecutive integers.  For such data, with unit bins
     centred on the integers, interpolation within the pooled histogram (what
     ehds-stats does) equals Hazen's definition exactly.

Usage:
  python -m venv .venv && .venv/bin/pip install lifelines numpy pandas
  .venv/bin/python scripts/stats-reference/km_reference.py
"""

import lifelines
import numpy as np
from lifelines import KaplanMeierFitter

# Follow-up time (integer months) and event indicator (1 = event, 0 = censored).
# Ties between events, and between events and censorings, are deliberate.
TIMES = [1, 2, 2, 3, 3, 3, 4, 5, 5, 6, 7, 8, 8, 9, 10, 10, 11, 12, 12, 13]
EVENTS = [1, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 0, 1, 1, 0, 0]
GRID = list(range(0, 14))

# Distinct consecutive integers 11..30 in a fixed shuffled order.
VALUES = [23, 11, 29, 17, 30, 14, 26, 20, 12, 27, 15, 24, 19, 28, 13, 21, 16, 25, 18, 22]
PROBABILITIES = [0.05, 0.1, 0.25, 0.33, 0.5, 0.62, 0.75, 0.9, 0.95]


def main():
    print(f"lifelines {lifelines.__version__}, numpy {np.__version__}")
    kmf = KaplanMeierFitter(alpha=0.05)
    kmf.fit(TIMES, EVENTS, timeline=GRID)
    sf = kmf.survival_function_["KM_estimate"]
    ci = kmf.confidence_interval_
    print("time survival ci_lower ci_upper")
    for t in GRID:
        lo = ci.iloc[:, 0].loc[t]
        hi = ci.iloc[:, 1].loc[t]
        print(f"{t} {float(sf.loc[t])!r} {float(lo)!r} {float(hi)!r}")
    print("probability hazen_quantile")
    for p in PROBABILITIES:
        q = np.quantile(np.array(VALUES, dtype=float), p, method="hazen")
        print(f"{p} {float(q)!r}")


if __name__ == "__main__":
    main()
