#!/usr/bin/python3
"""Per-split paired comparison of an experiment's methods, as docs/results.md reports it.

Usage: paired_summary.py RESULTS_DIR [--base soda] [--against oda sda lda] [--paper FILE]

Reads RESULTS_DIR/results.json (written by `ssdr experiment`). For every data set, labeled
count p and method it takes the best setting (parameters and dimension) by mean unlabeled
accuracy over the splits, as the experiment's summary does, and prints mean ± sample std of
the unlabeled and unseen accuracy (in %). Then, for the base method against each other one,
the per-split differences of unlabeled accuracy at each method's own best setting: mean ±
std, how many splits the base wins, and the two-sided paired t-test's p-value (Student's t
with splits − 1 degrees of freedom; the standard library only, no SciPy).
"""
import argparse
import json
import math
import os
import sys
from collections import defaultdict


def betacf(a, b, x):
    """Continued fraction of the regularized incomplete beta function (Lentz's method)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c
        c = c if abs(c) > tiny else tiny
        de = d * c
        h *= de
        if abs(de - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """I_x(a, b), the regularized incomplete beta function."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbt = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lbt) * betacf(a, b, x) / a
    return 1.0 - math.exp(lbt) * betacf(b, a, 1 - x) / b


def paired_t(diffs):
    """(t, two-sided p) of the paired t-test on the differences."""
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((x - mean) ** 2 for x in diffs) / (n - 1)) if n > 1 else 0.0
    if sd == 0:
        return (math.inf if mean else 0.0), (0.0 if mean else 1.0)
    t = mean / (sd / math.sqrt(n))
    nu = n - 1
    return t, betainc(nu / 2.0, 0.5, nu / (nu + t * t))


def mean_std(v):
    m = sum(v) / len(v)
    s = math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else 0.0
    return m, s


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("results_dir")
    ap.add_argument("--base", default="soda")
    ap.add_argument("--against", nargs="*", default=["oda", "sda", "lda"])
    args = ap.parse_args()
    path = os.path.join(args.results_dir, "results.json")
    try:
        with open(path) as f:
            results = json.load(f)["results"]
    except (OSError, ValueError, KeyError) as e:
        sys.exit(f"paired_summary.py: cannot read {path}: {e}")
    # (dataset, p, method) -> (params, dim) -> {split: (unlabeled, unseen)}
    runs = defaultdict(lambda: defaultdict(dict))
    for r in results:
        if "accuracy" not in r:  # a configuration its method rejected (its error is in results.json)
            continue
        acc = r["accuracy"]
        key = (r["dataset"], r["labeled_per_class"], r["method"])
        runs[key][(json.dumps(r["params"], sort_keys=True), r["dim"])][r["split"]] = (acc["unlabeled"], acc["unseen"])
    best = {}
    for key, settings in runs.items():
        ranked = sorted(settings.items(), key=lambda kv: (-mean_std([u for u, _ in kv[1].values()])[0], kv[0]))
        best[key] = ranked[0]
    print("| data set | p | method | unlabeled % | unseen % | dim | parameters | splits |")
    print("|---|---|---|---|---|---|---|---|")
    for (ds, p, m) in sorted(best):
        (params, dim), per = best[(ds, p, m)]
        u = mean_std([100 * a for a, _ in per.values()])
        seen = [100 * b for _, b in per.values() if b is not None]
        s = f"{mean_std(seen)[0]:.1f} ± {mean_std(seen)[1]:.1f}" if seen else "-"
        print(f"| {ds} | {p} | {m} | {u[0]:.1f} ± {u[1]:.1f} | {s} | {dim} | {params} | {len(per)} |")
    print()
    print(f"| data set | p | {args.base} − X | mean ± std (points) | {args.base} wins | paired t | p-value |")
    print("|---|---|---|---|---|---|---|")
    for (ds, p, m) in sorted(best):
        if m != args.base:
            continue
        base = best[(ds, p, m)][1]
        for other in args.against:
            if (ds, p, other) not in best:
                continue
            per = best[(ds, p, other)][1]
            splits = sorted(set(base) & set(per))
            diffs = [100 * (base[s][0] - per[s][0]) for s in splits]
            if len(diffs) < 2:
                continue
            mu, sd = mean_std(diffs)
            t, pv = paired_t(diffs)
            wins = sum(1 for x in diffs if x > 0)
            print(f"| {ds} | {p} | {other} | {mu:+.1f} ± {sd:.1f} | {wins} of {len(diffs)} | {t:.2f} | {pv:.2g} |")


if __name__ == "__main__":
    main()
