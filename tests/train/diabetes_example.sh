#!/usr/bin/env bash
# The regression example (examples/diabetes) on 2 ranks through its run.sh: its final test MAE
# must be at most 1.05 times that of scikit-learn's Ridge (standardized features, alpha 1) fitted
# here on the same split (the example's own train and validation files, read with h5py), and its
# R² above 0.4 (the mean predictor's is about 0). Prints both, for docs/models.md.
#   diabetes_example.sh COHORT WORKDIR
set -euo pipefail
cohort=$1 work=$2
rm -rf "$work" && mkdir -p "$work" && cd "$work"
COHORT=$cohort bash "$(dirname "$0")/../../examples/diabetes/run.sh" 2 --json >summary.json
/usr/bin/python3 - <<'PY'
import json
import h5py
from sklearn.linear_model import Ridge
from sklearn.metrics import mean_absolute_error, r2_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
s = json.load(open("summary.json"))
e = s["eval"]
train, val = h5py.File("data/diabetes-train.h5", "r"), h5py.File("data/diabetes-val.h5", "r")
ridge = make_pipeline(StandardScaler(), Ridge(alpha=1.0))
ridge.fit(train["inputs"][()], train["targets"][()])
predicted = ridge.predict(val["inputs"][()])
mae = mean_absolute_error(val["targets"][()], predicted)
r2 = r2_score(val["targets"][()], predicted)
print(f"diabetes, {s['ranks']} ranks, {s['steps']} steps: Cohort MLP test MAE {e['mae']:.2f} "
      f"(R² {e['r2']:.3f}); scikit-learn Ridge on the same split: MAE {mae:.2f} (R² {r2:.3f}); "
      f"{e['samples']} test samples")
assert s["ranks"] == 2 and e["task"] == "regression", s
assert e["samples"] == val["targets"].shape[0], e
assert e["mae"] <= 1.05 * mae, f"MAE {e['mae']} above 1.05 x Ridge's {mae}"
assert e["r2"] > 0.4, f"R² {e['r2']}"
PY
