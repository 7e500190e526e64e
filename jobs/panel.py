#!/usr/bin/python3
"""Issue 49's panel: ssdr fit/predict against scikit-learn recipes on partly labeled CSVs.

Six data sets built only from what is shipped (iris, wine, breast_cancer, digits from
/work/shared/datasets, COIL-20, and a stratified 3 000-row subset of Fashion-MNIST), two
regimes (5 labeled rows per class; 30 % of the rows labeled, stratified), seeds 0, 1, 2 of the
labeled draw: 12 cells of data set x regime, each the mean over the seeds.

Every panel file is what a user brings: a CSV with a header of feature names and a last column
`label` of class names, empty on the unlabeled rows. The truth of every row is in a separate
file (NAME.truth.csv: id,label). Files are written once under --out and reused.

References (scikit-learn, on features standardized with a StandardScaler fitted on all rows):
  ref1  LDA(solver="eigen", shrinkage="auto") on the labeled rows, 1-NN on their projections
  ref2  LabelSpreading(kernel="knn") on all rows, its transduction_
  ref3  LabelSpreading, then that LDA on all rows with the spread labels, 1-NN on the labeled
        rows' projections
  ref3b as ref3 but 1-NN fitted on all rows with the spread labels (information only)
Scores are accuracies on the unlabeled rows against the truth. They are cached in
OUT/sklearn_refs.json (keyed by the file's SHA-1 and scikit-learn's version).

Variants: NAME=ARGS (ARGS split with shlex) run as
  mpiexec -n RANKS BUILD/ssdr fit --data FILE --label-column label ARGS --model M --quiet
  mpiexec -n RANKS BUILD/ssdr predict --model M --data FILE --label-column label --output P.csv --quiet

  jobs/panel.sh --variant "soda=--method soda" --variant "lda=--method lda --shrinkage auto"

Data sets of your own (not shipped; the same regimes, seeds and recipes), e.g. public UCI and
face sets downloaded beforehand:
  jobs/panel.sh --variant "auto=--method auto" --extra sonar=DIR/sonar.csv
      --extra vehicle=DIR/vehicle.csv:header --extra letter=DIR/letter.csv:header:label=first
      --extra orl=DIR/ORL_32x32.mat --sets sonar,vehicle,letter,orl --out scratch/panel2
"""
import argparse
import datetime
import gzip
import hashlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

SHARED = "/work/shared/datasets"
FASHION = "/usr/share/datasets/fashion-mnist"
FASHION_ROWS = 3000
FASHION_SEED = 49          # the subset's draw (fixed; issue 49)
SETS = ["iris", "wine", "breast_cancer", "digits", "coil20", "fashion3k"]
REGIMES = ["5pc", "30pct"]  # 5 labeled rows per class; 30 % of each class labeled
SEEDS = [0, 1, 2]
TOL = 0.0005
REFS = ["ref1", "ref2", "ref3", "ref3b"]
REF_TITLES = {
    "ref1": "LDA→1NN",
    "ref2": "LS",
    "ref3": "LS→LDA→1NN",
    "ref3b": "LS→LDA→1NN(all)",
}
DIGIT_NAMES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
FASHION_NAMES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt",
                 "Sneaker", "Bag", "Ankle boot"]


def log(*a):
    print(*a, file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------
# The data sets: (feature names, feature fields as strings n x d, class names per row)

def _sklearn_meta(name, features, labels):
    """Feature and class names from scikit-learn's bundled copy, if it holds the same data."""
    try:
        from sklearn import datasets as D
        b = getattr(D, "load_" + name)()
        if np.array_equal(b.data, features) and np.array_equal(b.target, labels):
            return [str(f) for f in b.feature_names], [str(t) for t in b.target_names]
    except Exception as e:  # noqa: BLE001 - names are cosmetic; fall back
        log(f"note: scikit-learn's {name} metadata unavailable ({e}); generic names")
    return None, None


def load_shared_csv(name):
    path = os.path.join(SHARED, name + ".csv")
    with open(path) as f:
        rows = [line.rstrip("\n").split(",") for line in f if line.strip()]
    labels = np.array([int(r[0]) for r in rows])
    fields = [r[1:] for r in rows]
    d = len(fields[0])
    values = np.array(fields, dtype=float)
    feat, classes = _sklearn_meta(name, values, labels)
    if feat is None:
        feat = [f"f{j}" for j in range(d)]
    if name == "digits":
        classes = DIGIT_NAMES
    if classes is None:
        classes = [f"class_{k}" for k in range(labels.max() + 1)]
    return feat, fields, np.array(classes, dtype=object)[labels]


def load_coil20():
    X = np.load(os.path.join(SHARED, "coil20_X.npy"))
    y = np.load(os.path.join(SHARED, "coil20_y.npy")).astype(int)
    fields = [["%.9g" % v for v in row] for row in X.astype(np.float64)]
    feat = [f"px{j}" for j in range(X.shape[1])]
    names = np.array([f"obj{k + 1}" for k in range(y.max() + 1)], dtype=object)  # obj1..obj20
    return feat, fields, names[y]


def _read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    ndim = raw[3]
    dims = [int.from_bytes(raw[4 + 4 * i: 8 + 4 * i], "big") for i in range(ndim)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load_fashion3k():
    X = _read_idx(os.path.join(FASHION, "train-images-idx3-ubyte.gz")).reshape(-1, 784)
    y = _read_idx(os.path.join(FASHION, "train-labels-idx1-ubyte.gz")).astype(int)
    rng = np.random.default_rng(FASHION_SEED)
    per = FASHION_ROWS // 10
    keep = np.sort(np.concatenate([rng.choice(np.flatnonzero(y == k), per, replace=False)
                                   for k in range(10)]))
    X, y = X[keep], y[keep]
    fields = [[str(v) for v in row] for row in X]
    feat = [f"pixel{j + 1}" for j in range(784)]
    return feat, fields, np.array(FASHION_NAMES, dtype=object)[y]


EXTRA = {}  # --extra NAME=PATH[:header][:label=first]: name -> (path, options)


def load_extra(name):
    """A user's own data set (never shipped): a .mat file with fea (or X) and gnd, as Deng
    Cai's face sets are, or a CSV without quoting whose label is its last column (or its first
    with label=first), with a header row to skip when `header` is given."""
    path, opts = EXTRA[name]
    if path.endswith(".mat"):
        import scipy.io
        m = scipy.io.loadmat(path)
        X = np.asarray(m["fea"] if "fea" in m else m["X"], dtype=np.float64)
        y = np.asarray(m["gnd"]).ravel()
        fields = [["%.9g" % v for v in row] for row in X]
        return [f"px{j}" for j in range(X.shape[1])], fields, np.array([f"c{v}" for v in y], dtype=object)
    with open(path) as f:
        rows = [line.strip().split(",") for line in f if line.strip()]
    if "header" in opts:
        rows = rows[1:]
    at = 0 if "label=first" in opts else -1
    labels = [r[at].strip() for r in rows]
    fields = [[v.strip() for v in (r[1:] if at == 0 else r[:-1])] for r in rows]
    return [f"f{j}" for j in range(len(fields[0]))], fields, np.array(labels, dtype=object)


def load_set(name):
    if name in EXTRA:
        return load_extra(name)
    if name == "coil20":
        return load_coil20()
    if name == "fashion3k":
        return load_fashion3k()
    return load_shared_csv(name)


def labeled_draw(truth, regime, seed):
    """Stratified draw of the labeled rows: per class (sorted names), a seeded permutation."""
    rng = np.random.default_rng([seed, REGIMES.index(regime)])
    mask = np.zeros(len(truth), dtype=bool)
    for c in sorted(set(truth)):
        idx = np.flatnonzero(truth == c)
        k = 5 if regime == "5pc" else max(1, int(round(0.3 * len(idx))))
        mask[rng.permutation(idx)[:k]] = True
    return mask


def _csv_field(s):
    s = str(s)
    if any(ch in s for ch in ',"\n\r'):
        return '"' + s.replace('"', '""') + '"'
    return s


def _write_atomic(path, lines):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.writelines(lines)
    os.replace(tmp, path)


def panel_files(out, sets, regimes, seeds):
    """Writes (or reuses) the panel files; returns {set: {...}} and the list of cells."""
    data_dir = os.path.join(out, "data")
    os.makedirs(data_dir, exist_ok=True)
    files = []
    for name in sets:
        truth_path = os.path.join(data_dir, f"{name}.truth.csv")
        wanted = [(r, s, os.path.join(data_dir, f"{name}_{r}_s{s}.csv"))
                  for r in regimes for s in seeds]
        if name in EXTRA:
            # An --extra set's files are reused only for the same source file and options:
            # a stamp beside them names both (the source by its SHA-1), else they are rewritten.
            path, opts = EXTRA[name]
            stamp = json.dumps({"sha1": sha1(path), "options": sorted(opts)})
            stamp_path = os.path.join(data_dir, f"{name}.source.json")
            old = open(stamp_path).read() if os.path.exists(stamp_path) else None
            if old != stamp:
                for p in [truth_path] + [w[2] for w in wanted] + \
                        [os.path.join(data_dir, f) for f in os.listdir(data_dir) if f.startswith(name + "_")]:
                    if os.path.exists(p):
                        os.remove(p)
                _write_atomic(stamp_path, [stamp])
        loaded = None
        if not os.path.exists(truth_path) or not all(os.path.exists(p) for _, _, p in wanted):
            log(f"panel: writing {name} files")
            loaded = load_set(name)
            feat, fields, truth = loaded
            if not os.path.exists(truth_path):
                _write_atomic(truth_path, ["id,label\n"] +
                              [f"{i},{_csv_field(t)}\n" for i, t in enumerate(truth)])
            header = ",".join(_csv_field(f) for f in feat) + ",label\n"
            for r, s, p in wanted:
                if os.path.exists(p):
                    continue
                mask = labeled_draw(truth, r, s)
                _write_atomic(p, [header] + [",".join(row) + "," +
                                             (_csv_field(t) if m else "") + "\n"
                                             for row, t, m in zip(fields, truth, mask)])
        for r, s, p in wanted:
            files.append({"set": name, "regime": r, "seed": s, "file": p, "truth": truth_path})
    return files


def read_panel(path, truth_path):
    import pandas as pd
    df = pd.read_csv(path, dtype={"label": str}, keep_default_na=False, na_values=[])
    truth = pd.read_csv(truth_path, dtype={"label": str}, keep_default_na=False,
                        na_values=[])["label"].to_numpy(dtype=object)
    X = df.drop(columns=["label"]).to_numpy(dtype=float)
    lab = df["label"].to_numpy(dtype=object)
    labeled = lab != ""
    if len(truth) != len(X) or not np.all(truth[labeled] == lab[labeled]):
        raise SystemExit(f"panel: {path} disagrees with {truth_path}; delete them to rewrite")
    return X, lab, labeled, truth


def sha1(path):
    h = hashlib.sha1()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ----------------------------------------------------------------------------------------------
# scikit-learn references

def sklearn_refs(X, lab, labeled, truth):
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.preprocessing import StandardScaler
    from sklearn.semi_supervised import LabelSpreading

    classes = sorted(set(lab[labeled]))
    code = {c: i for i, c in enumerate(classes)}
    y = np.array([code[v] if m else -1 for v, m in zip(lab, labeled)])
    unl = ~labeled
    truth_u = truth[unl]
    cls = np.array(classes, dtype=object)

    def acc(pred_codes):
        return float(np.mean(cls[pred_codes] == truth_u))

    def lda():
        return LinearDiscriminantAnalysis(solver="eigen", shrinkage="auto")

    def nn1(Z_fit, y_fit, Z_pred):
        return KNeighborsClassifier(n_neighbors=1).fit(Z_fit, y_fit).predict(Z_pred)

    Xs = StandardScaler().fit_transform(X)
    out = {}
    t = time.perf_counter()
    Z = lda().fit(Xs[labeled], y[labeled]).transform(Xs)
    out["ref1"] = acc(nn1(Z[labeled], y[labeled], Z[unl]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ls = LabelSpreading(kernel="knn").fit(Xs, y)
    spread = ls.transduction_
    out["ref2"] = acc(spread[unl])
    Z = lda().fit(Xs, spread).transform(Xs)
    out["ref3"] = acc(nn1(Z[labeled], y[labeled], Z[unl]))
    out["ref3b"] = acc(nn1(Z, spread, Z[unl]))
    out["seconds"] = time.perf_counter() - t
    return out


# ----------------------------------------------------------------------------------------------
# ssdr variants

def last_line(*texts):
    """The last informative line: ssdr's own 'ssdr: ...' line if any, not mpiexec's rulers."""
    for text in texts:
        lines = [ln.strip() for ln in (text or "").splitlines()
                 if ln.strip() and set(ln.strip()) - set("-=* ")]
        own = [ln for ln in lines if ln.startswith("ssdr")]
        if own or lines:
            return (own or lines)[-1]
    return ""


def describe_rc(rc):
    if rc < 0 or rc > 128:
        sig = -rc if rc < 0 else rc - 128
        try:
            return f"rc={rc} (signal {signal.Signals(sig).name})"
        except ValueError:
            return f"rc={rc}"
    return f"rc={rc}"


class Timeout(Exception):
    pass


def run(cmd, timeout):
    """subprocess.run for mpiexec: a timeout or our own termination stops mpiexec with SIGTERM
    (it forwards the signal to its ranks, which have process groups of their own)."""
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    except BaseException as e:
        proc.terminate()
        try:
            proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        if isinstance(e, subprocess.TimeoutExpired):
            raise Timeout() from None
        raise
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def snapshot_ssdr(ssdr, dest, max_wait):
    """Copies the ssdr binary once it is stable (not being linked: unchanged for 30 s and
    answering --version), so that every fit of the panel runs the same build even while
    someone rebuilds the build dir. The binary links its own code statically (libssdr.a)."""
    deadline = time.time() + max_wait
    while True:
        why = None
        try:
            st = os.stat(ssdr)
            age = time.time() - st.st_mtime
            if age < 30:
                why = f"modified {age:.0f} s ago"
            else:
                v = subprocess.run([ssdr, "--version"], capture_output=True, text=True,
                                   timeout=60)
                if v.returncode != 0:
                    why = f"--version {describe_rc(v.returncode)}"
                else:
                    shutil.copy2(ssdr, dest)
                    st2 = os.stat(ssdr)
                    if (st2.st_mtime, st2.st_size) != (st.st_mtime, st.st_size) or \
                            sha1(dest) != sha1(ssdr):
                        why = "changed while copied"
                    else:
                        return (v.stdout.splitlines() or [""])[0]
        except (OSError, subprocess.TimeoutExpired) as e:
            why = str(e)
        if time.time() > deadline:
            raise SystemExit(f"panel: {ssdr} not stable after {max_wait:.0f} s ({why})")
        log(f"panel: waiting for {ssdr}: {why}")
        time.sleep(30)


def parse_time_s(stdout):
    """ssdr's own time_s from fit's table (stdout), if it prints one."""
    lines = [ln.split() for ln in (stdout or "").splitlines() if ln.strip()]
    for i, head in enumerate(lines[:-1]):
        if "time_s" in head and len(lines[i + 1]) == len(head):
            try:
                return float(lines[i + 1][head.index("time_s")])
            except ValueError:
                return None
    return None


def run_variant(ssdr, ranks, args, f, work, timeout, lab_unl_truth):
    import pandas as pd
    stem = os.path.splitext(os.path.basename(f["file"]))[0]
    model = os.path.join(work, stem + ".model")
    pred = os.path.join(work, stem + ".pred.csv")
    for p in (model, pred):
        if os.path.exists(p):
            os.remove(p)
    mpi = ["mpiexec", "-n", str(ranks), ssdr]
    fit = mpi + ["fit", "--data", f["file"], "--label-column", "label", *args,
                 "--model", model, "--quiet"]
    res = {"cmd_fit": shlex.join(fit)}
    t = time.perf_counter()
    try:
        p = run(fit, timeout)
    except Timeout:
        res.update(error=f"fit timed out after {timeout:g} s", fit_s=time.perf_counter() - t)
        return res
    res["fit_s"] = time.perf_counter() - t
    res["ssdr_time_s"] = parse_time_s(p.stdout)
    if p.returncode != 0:
        res["error"] = f"fit {describe_rc(p.returncode)}: " + last_line(p.stderr, p.stdout)
        return res
    prd = mpi + ["predict", "--model", model, "--data", f["file"], "--label-column", "label",
                 "--output", pred, "--quiet"]
    t = time.perf_counter()
    try:
        p = run(prd, timeout)
    except Timeout:
        res["error"] = f"predict timed out after {timeout:g} s"
        return res
    res["predict_s"] = time.perf_counter() - t
    if p.returncode != 0:
        res["error"] = f"predict {describe_rc(p.returncode)}: " + last_line(p.stderr, p.stdout)
        return res
    labeled, truth = lab_unl_truth
    try:
        df = pd.read_csv(pred, dtype=str, keep_default_na=False, na_values=[])
        ids = df["id"].astype(int).to_numpy()
        yhat = np.empty(len(truth), dtype=object)
        if len(ids) != len(truth) or set(ids) != set(range(len(truth))):
            raise ValueError(f"{len(ids)} predictions with ids not 0..{len(truth) - 1}")
        yhat[ids] = df["prediction"].to_numpy(dtype=object)
    except Exception as e:  # noqa: BLE001 - record and continue
        res["error"] = f"reading {pred}: {e}"
        return res
    unl = ~labeled
    res["acc"] = float(np.mean(yhat[unl] == truth[unl]))
    res["acc_labeled"] = float(np.mean(yhat[labeled] == truth[labeled]))
    return res


# ----------------------------------------------------------------------------------------------
# Table

def fmt(v, mark=""):
    return "—" if v is None else f"{v:.3f}{mark}"


def summarize(files, refs, runs, variants):
    cells = []
    for f in files:
        key = (f["set"], f["regime"])
        if not cells or cells[-1]["key"] != key:
            cells.append({"key": key, "set": f["set"], "regime": f["regime"], "files": []})
        cells[-1]["files"].append(f)
    for c in cells:
        c["info"] = c["files"][0].get("info", {})
        c["seeds"] = [f["seed"] for f in c["files"]]
        for r in REFS:
            vals = [refs.get(os.path.basename(f["file"]), {}).get(r) for f in c["files"]]
            c[r] = float(np.mean(vals)) if vals and all(v is not None for v in vals) else None
        best = [c[r] for r in ("ref1", "ref2", "ref3")]
        c["best_ref"] = max(best) if all(v is not None for v in best) else None
        c["variants"] = {}
        for name, _ in variants:
            rs = [runs[name][os.path.basename(f["file"])] for f in c["files"]]
            ok = [r["acc"] for r in rs if "acc" in r]
            c["variants"][name] = {
                "mean": float(np.mean(ok)) if ok else None,
                "n_ok": len(ok), "n": len(rs),
                "fit_s": [r["fit_s"] for r in rs if "acc" in r],
                "ssdr_time_s": [r["ssdr_time_s"] for r in rs
                                if "acc" in r and r.get("ssdr_time_s") is not None],
                "errors": [r["error"] for r in rs if "error" in r],
            }
    summary = {}
    for name, args in variants:
        ge, short, fit_s, own_s, failed, n_cmp = 0, [], [], [], 0, 0
        for c in cells:
            v = c["variants"][name]
            fit_s += v["fit_s"]
            own_s += v["ssdr_time_s"]
            complete = v["n_ok"] == v["n"]
            if not complete:
                failed += 1
            if c["ref3"] is not None:
                n_cmp += 1
                if complete and v["mean"] >= c["ref3"] - TOL:
                    ge += 1
            if complete and c["best_ref"] is not None:
                short.append(max(0.0, c["best_ref"] - v["mean"]))
        summary[name] = {
            "args": args,
            "cells_ge_ref3": ge, "cells_compared": n_cmp,
            "mean_shortfall": float(np.mean(short)) if short else None,
            "max_shortfall": float(np.max(short)) if short else None,
            "shortfall_cells": len(short),
            "mean_fit_s": float(np.mean(fit_s)) if fit_s else None,
            "max_fit_s": float(np.max(fit_s)) if fit_s else None,
            "mean_ssdr_time_s": float(np.mean(own_s)) if own_s else None,
            "failed_cells": failed,
        }
    return cells, summary


def markdown(cells, summary, variants, meta):
    out = ["# ssdr panel (issue 49)\n",
           f"{meta['date']} · {meta['ssdr_version'] or 'no ssdr run'} · repo HEAD {meta['commit']} · "
           f"{meta['ranks']} rank(s) · seeds {','.join(map(str, meta['seeds']))} · "
           f"scikit-learn {meta['sklearn']}\n",
           "Accuracy on the unlabeled rows, mean over the seeds. ref1 = shrinkage LDA → 1-NN; "
           "ref2 = LabelSpreading(knn); ref3 = LS → LDA → 1-NN on the labeled rows; ref3b = "
           "LS → LDA → 1-NN on all rows with the spread labels (information only: each unlabeled "
           "row is its own nearest neighbour, so ref3b repeats ref2 but for duplicate rows). "
           "`*`: some seeds failed (mean of the others); `ERR`: every seed failed.\n"]
    head = ["cell", "n", "d", "c", "labeled"] + [f"{r} {REF_TITLES[r]}" for r in REFS] + \
           [name for name, _ in variants]
    out.append("| " + " | ".join(head) + " |")
    out.append("|" + "|".join(["---"] * 5 + ["---:"] * (len(head) - 5)) + "|")
    for c in cells:
        i = c["info"]
        row = [f"{c['set']} {c['regime']}", str(i.get("n", "")), str(i.get("d", "")),
               str(i.get("c", "")), str(i.get("labeled", ""))]
        row += [fmt(c[r]) for r in REFS]
        for name, _ in variants:
            v = c["variants"][name]
            row.append("ERR" if v["n_ok"] == 0 else fmt(v["mean"], "*" if v["n_ok"] < v["n"] else ""))
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    if not variants:
        return "\n".join(out) + "\n"
    out.append("| variant | ≥ ref3 (cells) | mean shortfall vs best(ref1–3) | max shortfall | "
               "mean fit s | max fit s | mean ssdr time_s | failed cells | ssdr fit arguments |")
    out.append("|---|---:|---:|---:|---:|---:|---:|---:|---|")
    for name, args in variants:
        s = summary[name]
        out.append(f"| {name} | {s['cells_ge_ref3']}/{s['cells_compared']} | "
                   f"{fmt(s['mean_shortfall'])} | {fmt(s['max_shortfall'])} | "
                   f"{'—' if s['mean_fit_s'] is None else '%.2f' % s['mean_fit_s']} | "
                   f"{'—' if s['max_fit_s'] is None else '%.2f' % s['max_fit_s']} | "
                   f"{'—' if s['mean_ssdr_time_s'] is None else '%.2f' % s['mean_ssdr_time_s']} | "
                   f"{s['failed_cells']} | `{shlex.join(args)}` |")
    out.append("")
    out.append(f"Targets (issue 49): ≥ ref3 (tolerance {TOL}) in most cells (14 of 18 on the "
               "hidden panel); mean shortfall ≤ 0.020. A failed cell counts as below ref3; "
               "shortfalls are over the cells where every seed ran. Fit seconds are the wall "
               "time of the successful `mpiexec … ssdr fit` runs (MPI start-up included); ssdr "
               "time_s is the fit's own time from its table.")
    errs = [(c["set"], c["regime"], name, e) for c in cells for name, _ in variants
            for e in c["variants"][name]["errors"]]
    if errs:
        out.append("\nErrors:\n")
        for s, r, name, e in errs:
            out.append(f"- {s} {r} {name}: {e}")
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------------------------

def parse_variant(text):
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"--variant {text!r}: expected NAME=ARGS")
    name, args = text.split("=", 1)
    name = name.strip()
    if not name or any(ch in name for ch in "/ "):
        raise argparse.ArgumentTypeError(f"--variant {text!r}: bad name")
    return name, shlex.split(args)


def csv_list(allowed, cast=str):
    def parse(text):
        vals = [cast(v) for v in text.split(",") if v.strip()]
        bad = [v for v in vals if allowed is not None and v not in allowed]
        if bad or not vals:
            raise argparse.ArgumentTypeError(f"{text!r}: choose from {allowed}")
        return vals
    return parse


def main():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter,
                                 epilog=__doc__.split("\n", 1)[1])
    ap.add_argument("--variant", action="append", type=parse_variant, default=[],
                    metavar="NAME=ARGS", help="an ssdr fit variant (repeatable)")
    ap.add_argument("--ranks", type=int, default=1, help="MPI ranks per fit/predict (1)")
    ap.add_argument("--sets", type=csv_list(None), default=None,
                    help="comma-separated subset of " + ",".join(SETS) + " and the --extra names "
                    "(default: all of them)")
    ap.add_argument("--extra", action="append", default=[], metavar="NAME=PATH[:header][:label=first]",
                    help="a data set of your own, not shipped (repeatable): a CSV whose label is its "
                    "last column (first with :label=first; :header skips a header row), or a .mat "
                    "with fea (or X) and gnd")
    ap.add_argument("--regimes", type=csv_list(REGIMES), default=REGIMES,
                    help="comma-separated subset of " + ",".join(REGIMES))
    ap.add_argument("--seeds", type=csv_list(None, int), default=SEEDS, help="e.g. 0,1,2")
    ap.add_argument("--out", default=os.path.join(root, "scratch", "panel"),
                    help="output dir (default scratch/panel)")
    ap.add_argument("--build", default=os.environ.get("SSDR_BUILD", os.path.join(root, "build")),
                    help="build dir holding ssdr (default $SSDR_BUILD or build/)")
    ap.add_argument("--skip-sklearn", action="store_true",
                    help="compute no references: use the cached ones where present")
    ap.add_argument("--timeout", type=float, default=3600, help="seconds per fit/predict")
    ap.add_argument("--keep", action="store_true", help="keep the models and predictions")
    ap.add_argument("--wait-build", type=float, default=1800,
                    help="seconds to wait for a stable ssdr binary (one being linked)")
    a = ap.parse_args()
    for text in a.extra:
        name, _, rest = text.partition("=")
        parts = rest.split(":")
        if not name or any(ch in name for ch in "/ _") or name in SETS or name in EXTRA or not parts[0]:
            ap.error(f"--extra {text!r}: expected a new NAME (no '/', ' ' or '_') =PATH")
        if not os.path.isfile(parts[0]):
            ap.error(f"--extra {text!r}: {parts[0]} is not a file")
        bad = [o for o in parts[1:] if o not in ("header", "label=first")]
        if bad:
            ap.error(f"--extra {text!r}: unknown option {bad[0]!r} (header, label=first)")
        EXTRA[name] = (parts[0], set(parts[1:]))
    if a.sets is None:
        a.sets = SETS + list(EXTRA)
    unknown = [x for x in a.sets if x not in SETS and x not in EXTRA]
    if unknown:
        ap.error(f"--sets: {unknown[0]!r} is neither one of {','.join(SETS)} nor an --extra name")
    names = [n for n, _ in a.variant]
    if len(set(names)) != len(names):
        ap.error("variant names must be unique")
    ssdr = os.path.join(a.build, "ssdr")
    if a.variant and not os.access(ssdr, os.X_OK):
        ap.error(f"{ssdr} not found (or not executable): build it or pass --build")
    os.makedirs(a.out, exist_ok=True)
    import sklearn

    files = panel_files(a.out, a.sets, a.regimes, a.seeds)
    cache_path = os.path.join(a.out, "sklearn_refs.json")
    cache = {}
    if os.path.exists(cache_path):
        with open(cache_path) as fh:
            cache = json.load(fh)
    refs = {}
    runs = {name: {} for name in names}

    def terminate(signum, _frame):
        raise SystemExit(f"panel: stopped by signal {signum}")
    signal.signal(signal.SIGTERM, terminate)
    signal.signal(signal.SIGHUP, terminate)
    work_root = tempfile.mkdtemp(prefix="runs.", dir=a.out)
    version, ssdr_sha1, build_ssdr = "", "", ssdr
    try:
        if a.variant:
            snap = os.path.join(work_root, "ssdr")
            version = snapshot_ssdr(ssdr, snap, a.wait_build)
            ssdr_sha1 = sha1(snap)
            log(f"panel: running a copy of {ssdr} ({version}, sha1 {ssdr_sha1[:12]})")
            ssdr = snap
        for f in files:
            base = os.path.basename(f["file"])
            X, lab, labeled, truth = read_panel(f["file"], f["truth"])
            f["info"] = {"n": len(X), "d": X.shape[1], "c": len(set(truth)),
                         "labeled": int(labeled.sum())}
            f["sha1"] = digest = sha1(f["file"])
            hit = cache.get(base)
            if hit and hit.get("sha1") == digest and hit.get("sklearn") == sklearn.__version__:
                refs[base] = hit
            elif not a.skip_sklearn:
                r = sklearn_refs(X, lab, labeled, truth)
                r.update(sha1=digest, sklearn=sklearn.__version__)
                cache[base] = refs[base] = r
                _write_atomic(cache_path, [json.dumps(cache, indent=1, sort_keys=True) + "\n"])
                log(f"{base}: sklearn " + " ".join(f"{k}={r[k]:.3f}" for k in REFS) +
                    f" ({r['seconds']:.1f} s)")
            for name, args in a.variant:
                work = os.path.join(work_root, name)
                os.makedirs(work, exist_ok=True)
                r = run_variant(ssdr, a.ranks, args, f, work, a.timeout, (labeled, truth))
                runs[name][base] = r
                msg = f"acc={r['acc']:.3f}" if "acc" in r else "ERROR " + r["error"]
                log(f"{base}: {name} {msg} (fit {r.get('fit_s', float('nan')):.2f} s)")
    finally:
        if not a.keep:
            subprocess.run(["rm", "-rf", "--", work_root], check=False)
        else:
            log(f"models and predictions kept in {work_root}")

    cells, summary = summarize(files, refs, runs, a.variant)
    commit = subprocess.run(["git", "-C", root, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip()
    meta = {"date": datetime.datetime.now().isoformat(timespec="seconds"),
            "ssdr": build_ssdr, "ssdr_version": version, "ssdr_sha1": ssdr_sha1, "commit": commit, "ranks": a.ranks,
            "sets": a.sets, "regimes": a.regimes, "seeds": a.seeds,
            "sklearn": sklearn.__version__, "tolerance": TOL,
            "fashion_subset": {"rows": FASHION_ROWS, "seed": FASHION_SEED,
                               "source": "train-images-idx3-ubyte.gz"},
            "extra": {n: {"path": os.path.abspath(p), "options": sorted(o), "sha1": sha1(p)}
                      for n, (p, o) in EXTRA.items() if n in a.sets},
            "command": shlex.join(sys.argv)}
    md = markdown(cells, summary, a.variant, meta)
    print(md)
    _write_atomic(os.path.join(a.out, "panel.md"), [md])
    report = {"meta": meta, "variants": {n: summary[n] for n in names},
              "cells": [{k: v for k, v in c.items() if k not in ("key", "files")} for c in cells],
              "files": [dict(f, refs=refs.get(os.path.basename(f["file"])),
                             runs={n: runs[n][os.path.basename(f["file"])] for n in names})
                        for f in files]}
    _write_atomic(os.path.join(a.out, "panel.json"), [json.dumps(report, indent=1) + "\n"])
    log(f"wrote {os.path.join(a.out, 'panel.md')} and panel.json")


if __name__ == "__main__":
    main()
