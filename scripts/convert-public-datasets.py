#!/usr/bin/env python3
"""Convert the small real data sets bundled in public Python packages into the files the
engine's reproductions read, and fit the pooled Cox references.

Sources (bundled inside the wheels, nothing is downloaded):

* scikit-survival `sksurv.datasets.load_gbsg2()` (German Breast Cancer Study Group 2) and
  `load_whas500()` (Worcester Heart Attack Study, 500 patients);
* scikit-learn `sklearn.datasets.load_digits()` (1,797 8x8 handwritten digits).

Outputs, under fl_engine/data/<name>/:

* gbsg2/gbsg2.csv, whas500/whas500.csv: `group,set,<features...>,time,event`, categorical
  covariates one-hot encoded with the first level dropped; `set` is a fixed, event-stratified
  60/20/20 train/val/test assignment (seed 0); `group` is the column the site splits use
  (GBSG2: tumour grade, the natural split; WHAS500: age quartile, the Dirichlet skew key).
* <name>/cox_reference.json: the pooled Cox model fitted on the `train` rows (z-scored with the
  train rows' statistics), its coefficients and its Harrell C-index on the `test` rows, from
  lifelines' CoxPHFitter (Efron ties, the only tie rule lifelines implements) and from
  scikit-survival's CoxPHSurvivalAnalysis with Breslow ties (the engine's rule), both
  unpenalised. C-indices use scikit-survival's concordance_index_censored, the rules the engine
  implements.
* digits/digits.csv: `set,label,p0..p63` (pixel intensities 0..16 as shipped), label-stratified
  60/20/20 train/val/test (seed 0).

Run once, in a throwaway virtual environment:

    python3 -m venv /tmp/venv && /tmp/venv/bin/pip install scikit-survival==0.28.0 lifelines==0.30.3
    /tmp/venv/bin/python scripts/convert-public-datasets.py fl_engine/data

The engine reads only the committed outputs.
"""
import json
import platform
import sys
from pathlib import Path

import lifelines
import numpy as np
import pandas as pd
import sklearn
import sksurv
from lifelines import CoxPHFitter
from sklearn.datasets import load_digits
from sksurv.datasets import load_gbsg2, load_whas500
from sksurv.linear_model import CoxPHSurvivalAnalysis
from sksurv.metrics import concordance_index_censored

SCRIPT = "scripts/convert-public-datasets.py"
FRACTIONS = (0.6, 0.2, 0.2)


def stratified_sets(strata: np.ndarray, seed: int = 0) -> np.ndarray:
    """`train`/`val`/`test` per row, 60/20/20 inside every stratum (rounded down for val/test)."""
    rng = np.random.RandomState(seed)
    out = np.empty(len(strata), dtype=object)
    for s in np.unique(strata):
        rows = np.flatnonzero(strata == s)
        rng.shuffle(rows)
        n_val = int(len(rows) * FRACTIONS[1])
        n_test = int(len(rows) * FRACTIONS[2])
        out[rows[:n_test]] = "test"
        out[rows[n_test:n_test + n_val]] = "val"
        out[rows[n_test + n_val:]] = "train"
    return out


def encode(x: pd.DataFrame) -> pd.DataFrame:
    """Numeric columns as they are; categoricals one-hot with the first level dropped."""
    cols = {}
    for name in x.columns:
        col = x[name]
        if isinstance(col.dtype, pd.CategoricalDtype):
            for level in col.cat.categories[1:]:
                cols[f"{name}={level}"] = (col == level).astype(float)
        else:
            cols[name] = col.astype(float)
    return pd.DataFrame(cols)


def cindex(risk, time, event) -> float:
    return float(concordance_index_censored(event.astype(bool), time, risk)[0])


def cox_reference(name, x, time, event, sets, groups, group_label) -> dict:
    train, test = sets == "train", sets == "test"
    mean = x[train].mean()
    std = x[train].std(ddof=0).replace(0.0, 1.0)
    z = (x - mean) / std
    df = z[train].copy()
    df["time"], df["event"] = time[train], event[train].astype(int)
    lf = CoxPHFitter(penalizer=0.0).fit(df, duration_col="time", event_col="event")
    beta_lf = lf.params_[x.columns].to_numpy()
    y_train = np.array(list(zip(event[train].astype(bool), time[train])),
                       dtype=[("event", bool), ("time", float)])
    sk = CoxPHSurvivalAnalysis(alpha=0.0, ties="breslow").fit(z[train].to_numpy(), y_train)
    beta_sk = np.asarray(sk.coef_)

    def fit_summary(beta):
        risk = z.to_numpy() @ beta
        per_group = {}
        for g in np.unique(groups):
            rows = test & (groups == g)
            per_group[str(g)] = cindex(risk[rows], time[rows], event[rows])
        return {
            "coefficients": {c: float(b) for c, b in zip(x.columns, beta)},
            "train_c_index": cindex(risk[train], time[train], event[train]),
            "test_c_index": cindex(risk[test], time[test], event[test]),
            f"test_c_index_by_{group_label}": per_group,
        }

    return {
        "dataset": name,
        "generated_by": SCRIPT,
        "versions": {
            "python": platform.python_version(),
            "lifelines": lifelines.__version__,
            "scikit-survival": sksurv.__version__,
            "numpy": np.__version__,
            "pandas": pd.__version__,
        },
        "protocol": "unpenalised Cox model fitted on the `train` rows, features z-scored with "
                    "the train rows' mean and population std; Harrell's C-index "
                    "(scikit-survival's concordance_index_censored) of the linear predictor",
        "features": list(x.columns),
        "rows": {s: int((sets == s).sum()) for s in ("train", "val", "test")},
        "events": {s: int(event[sets == s].sum()) for s in ("train", "val", "test")},
        "lifelines_efron": fit_summary(beta_lf),
        "sksurv_breslow": fit_summary(beta_sk),
    }


def write_survival(out: Path, name: str, x: pd.DataFrame, y, time_field: str, event_field: str,
                   groups: np.ndarray, group_label: str) -> None:
    time = y[time_field].astype(float)
    event = y[event_field].astype(bool)
    sets = stratified_sets(event.astype(int))
    enc = encode(x)
    d = out / name
    d.mkdir(parents=True, exist_ok=True)
    table = enc.copy()
    table.insert(0, "set", sets)
    table.insert(0, "group", groups)
    table["time"] = time
    table["event"] = event.astype(int)
    table.to_csv(d / f"{name}.csv", index=False, float_format="%.10g", lineterminator="\n")
    ref = cox_reference(name, enc, time, event, sets, groups, group_label)
    (d / "cox_reference.json").write_text(json.dumps(ref, indent=2) + "\n")
    print(name, ref["rows"], "lifelines test C", round(ref["lifelines_efron"]["test_c_index"], 4),
          "Breslow test C", round(ref["sksurv_breslow"]["test_c_index"], 4))


def main(out_dir: str) -> None:
    out = Path(out_dir)
    x, y = load_gbsg2()
    # tumour grade: a natural grouping (hospitals differ in case mix, grade drives prognosis)
    write_survival(out, "gbsg2", x, y, "time", "cens", x["tgrade"].astype(str).to_numpy(),
                   "tgrade")
    x, y = load_whas500()
    quartile = pd.qcut(x["age"], 4, labels=False).to_numpy()
    write_survival(out, "whas500", x, y, "lenfol", "fstat", quartile, "age_quartile")

    digits = load_digits()
    sets = stratified_sets(digits.target)
    d = out / "digits"
    d.mkdir(parents=True, exist_ok=True)
    table = pd.DataFrame(digits.data.astype(int), columns=[f"p{i}" for i in range(64)])
    table.insert(0, "label", digits.target)
    table.insert(0, "set", sets)
    table.to_csv(d / "digits.csv", index=False, lineterminator="\n")
    print("digits", {s: int((sets == s).sum()) for s in ("train", "val", "test")},
          "scikit-learn", sklearn.__version__)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "fl_engine/data")
