"""How --method auto's rule was chosen (issue 49): every candidate's CV score beside its truth.

For each panel file (jobs/panel.py writes them: a user's CSV with empty labels, and the
set's .truth.csv beside it), on one rank:
  1. ssdr.Auto's selection report with racing off (auto_race=False): every candidate and m
     with its pooled CV accuracy on the labeled rows (what auto sees; the race would stop the
     candidates that cannot beat the default family, and a rule study needs their scores);
  2. each candidate fitted on all labeled rows (a nested method once, at its widest m, and
     scored on the leading columns), 1-NN on the unlabeled rows against their truth (what
     auto cannot see).
Then it scores choice rules on the cells (data set x regime, mean over the seeds) against
the scikit-learn recipes the panel cached (sklearn_refs.json): how many cells reach
LabelSpreading -> LDA -> 1-NN, and the mean shortfall against the best recipe.

Usage (from the repository root, after `source jobs/env.sh` and a build with ssdr_python):
  PYTHONPATH=build/python /usr/bin/python3 jobs/auto_study.py collect OUT.json FILE.csv...
  /usr/bin/python3 jobs/auto_study.py rules OUT.json scratch/panel/sklearn_refs.json
"""
import collections
import json
import math
import os
import sys

import numpy as np


def nn1(Z, lab, unl, y):
    A, B = Z[lab], Z[unl]
    d = (B * B).sum(1)[:, None] - 2 * B @ A.T + (A * A).sum(1)[None, :]
    return y[lab][np.argmin(d, axis=1)]


def collect_one(path):
    import pandas as pd
    import ssdr
    stem = os.path.basename(path)
    truth_path = os.path.join(os.path.dirname(path), stem.rsplit("_", 2)[0] + ".truth.csv")
    df = pd.read_csv(path, dtype={"label": str}, keep_default_na=False)
    y = df["label"].to_numpy(object)
    X = df.drop(columns=["label"]).to_numpy(float)
    truth = pd.read_csv(truth_path, dtype=str, keep_default_na=False).iloc[:, -1].to_numpy(object)
    lab = y != ""
    yy = np.where(lab, y, None)
    # seed 0: ssdr fit's default; every candidate scored on every fold (no race).
    sel = ssdr.Auto(seed=0, auto_race=False).fit(X, yy).info_["selection"]
    assert sel["pruned"] == 0, sel["pruned"]
    groups = collections.OrderedDict()
    for c in sel["candidates"]:
        if "error" in c:
            continue
        p = {k: v for k, v in c["params"].items() if k != "dim"}
        groups.setdefault(json.dumps(p, sort_keys=True), []).append(c)
    rows = []
    for key, entries in groups.items():
        p = json.loads(key)
        method = p.pop("method")
        dims = [c["params"]["dim"] for c in entries]
        nested = method != "soda"
        for fit_dim in ([max(dims)] if nested else dims):
            Z = ssdr.Estimator(method, dim=fit_dim, seed=0, **p).fit(X, yy).transform(X)
            for c in entries:
                m = c["params"]["dim"]
                if (nested and m <= fit_dim) or m == fit_dim:
                    acc = float(np.mean(nn1(Z[:, :m], lab, ~lab, y) == truth[~lab]))
                    rows.append(dict(params=c["params"], correct=c["correct"], scored=c["scored"],
                                     preferred=bool(c.get("preferred")), truth=acc))
    return dict(file=stem, chosen=sel["chosen"], rows=rows)


def first_best(rows, key):
    best = None
    for r in rows:
        if best is None or key(r) > key(best):
            best = r
    return best


def plain_max(f):
    return first_best(f["rows"], lambda r: r["correct"])


def default_family(f):
    """auto's rule: the best preferred entry unless the best of all beats it by one SE."""
    a = first_best([r for r in f["rows"] if r["preferred"]], lambda r: r["correct"])
    b = plain_max(f)
    if a is None:
        return b
    p, n = a["correct"] / a["scored"], a["scored"]
    se = math.sqrt(max(p * (1 - p), 1 / n) / n)
    return b if b["correct"] / n > p + se else a


def rules(study, refs):
    cells = collections.OrderedDict()
    for f in study:
        cells.setdefault(f["file"].rsplit("_", 1)[0], []).append(f)
    for name, rule in (("plain maximum", plain_max), ("default family + 1 SE (auto)", default_family),
                       ("oracle (truth)", lambda f: first_best(f["rows"], lambda r: r["truth"]))):
        wins, short, text = 0, [], []
        for cell, fs in cells.items():
            acc = np.mean([rule(f)["truth"] for f in fs])
            ref3 = np.mean([refs[f["file"]]["ref3"] for f in fs])
            best = np.mean([max(refs[f["file"]][k] for k in ("ref1", "ref2", "ref3")) for f in fs])
            ok = acc >= ref3 - 5e-4  # the panel's tolerance
            wins += ok
            short.append(max(best - acc, 0.0))
            text.append("%s %.3f%s" % (cell, acc, "" if ok else "↓"))
        print("%-30s >= LS->LDA->1NN in %d/%d cells, mean shortfall %.4f" % (name, wins, len(cells), np.mean(short)))
        print("    " + ", ".join(text))


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "collect":
        out = sys.argv[2]
        study = json.load(open(out)) if os.path.exists(out) else []
        done = {f["file"] for f in study}
        for path in sys.argv[3:]:
            if os.path.basename(path) in done:
                continue
            study.append(collect_one(path))
            tmp = out + ".part"
            with open(tmp, "w") as fh:
                json.dump(study, fh)
            os.replace(tmp, out)
            print(os.path.basename(path), flush=True)
    elif len(sys.argv) == 4 and sys.argv[1] == "rules":
        rules(json.load(open(sys.argv[2])), json.load(open(sys.argv[3])))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
