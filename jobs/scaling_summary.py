#!/usr/bin/python3
"""Strong-scaling summary of `ssdr fit --report` files: the same problem on several rank counts.

Usage: scaling_summary.py [--weak] PREFIX REPORT.json...

Prints one line per rank count (total and per-stage seconds, speedup and parallel efficiency
over the smallest rank count p0, peak memory per rank) and writes PREFIX_scaling.dat and
PREFIX_scaling.gp; gnuplot, when installed, renders PREFIX_scaling.png from them: speedup
against ranks with the ideal line, and the efficiency of the whole fit and of each stage that
takes at least 2 % of it on p0 ranks. Speedup S(p) = T(p0) / T(p), ideal p / p0; efficiency
E(p) = S(p) p0 / p. --weak: the reports are one problem per rank count with the same samples
per rank (n and the data file grow with p); then E(p) = T(p0) / T(p) (ideal 1) and S(p) =
E(p) p / p0 (the scaled speedup). Used by jobs/slurm/strong_scaling.sbatch and
jobs/scaling_study.sh; standard library only.
"""
import json
import os
import shutil
import subprocess
import sys

# The experiment plots' colours (src/driver/summary.cpp): ten that stay apart on white.
PALETTE = [f"set linetype {i + 1} lc rgb '{c}'" for i, c in enumerate(
    ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"])]
STAGES = ["read", "preprocess", "knn_graph", "propagation", "scatter", "eigensolve", "evaluate"]


def gp_quote(text):
    """Text as a gnuplot single-quoted string (no substitution inside; a quote doubled)."""
    return "'" + "".join(c for c in str(text) if c >= " ").replace("'", "''") + "'"


def main(argv):
    weak = len(argv) > 1 and argv[1] == "--weak"
    if weak:
        argv = argv[:1] + argv[2:]
    if len(argv) < 3:
        sys.exit(__doc__.split("\n\n")[1])
    prefix, files = argv[1], argv[2:]
    rows = sorted((json.load(open(f)) for f in files), key=lambda r: r["ranks"])
    if len({r["ranks"] for r in rows}) != len(rows):
        sys.exit("scaling_summary.py: two reports with the same rank count")
    first = rows[0]
    for r in rows[1:]:
        for key in ("method", "d") if weak else ("method", "n", "d", "data"):
            if r.get(key) != first.get(key):
                sys.exit(f"scaling_summary.py: the reports are not one problem ({key}: {first.get(key)} vs {r.get(key)})")
    p0, t0 = first["ranks"], first["timings_s"]["total"]
    stages = [s for s in STAGES if first["timings_s"].get(s, 0) >= 0.02 * t0]

    print(f"{first['method']} on {first['data']} (n = {first['n']}{' on ' + str(p0) + ' rank(s), the same per rank on every count' if weak else ''}, d = {first['d']}): "
          f"{'weak' if weak else 'strong'} scaling, speedup and efficiency over {p0} rank(s)")
    print("ranks        n  total_s  speedup  efficiency " + " ".join(f"{s + '_s':>13}" for s in stages) + "  peak_MiB/rank")
    dat = [f"# {first['method']} on {first['data']}, n = {first['n']}, d = {first['d']}; speedup S = T(p0)/T(p), "
           f"efficiency S*p0/p, p0 = {p0}",
           "# columns: ranks total_s speedup efficiency peak_mib_per_rank "
           + " ".join(f"{s}_s {s}_efficiency" for s in stages)]
    for r in rows:
        t, p = r["timings_s"], r["ranks"]
        eff = t0 / t["total"] * (1 if weak else p0 / p)
        speedup = eff * p / p0
        peak = r.get("peak_memory_mib", {}).get("max", float("nan"))
        print(f"{p:5d} {r['n']:8d} {t['total']:8.1f} {speedup:8.2f} {eff:11.2f} "
              + " ".join(f"{t.get(s, 0):13.2f}" for s in stages) + f" {peak:14.0f}")
        stage_cols = []
        for s in stages:
            ts = t.get(s, 0)
            stage_cols += [f"{ts:.6g}", f"{first['timings_s'][s] / ts * (1 if weak else p0 / p):.6g}" if ts > 0 else "-"]
        dat.append(" ".join([str(p), f"{t['total']:.6g}", f"{speedup:.6g}", f"{eff:.6g}", f"{peak:.6g}"] + stage_cols))

    folder, stem = os.path.dirname(prefix) or ".", os.path.basename(prefix) + "_scaling"
    with open(os.path.join(folder, stem + ".dat"), "w") as f:
        f.write("\n".join(dat) + "\n")
    pmax = rows[-1]["ranks"]
    title = (f"{first['method']} {'weak' if weak else 'strong'} scaling on {os.path.basename(str(first['data']).rstrip('/'))}"
             f" (n = {first['n']}{' per ' + str(p0) + ' rank(s)' if weak else ''}, d = {first['d']}), {p0}..{pmax} ranks")
    gp = []
    for term, ext in (("pngcairo size 1000,450 noenhanced font ',10'", "png"), ("svg size 1000,450 noenhanced font ',10'", "svg")):
        gp += [f"set terminal {term}", "set encoding utf8", f"set output '{stem}.{ext}'"] + PALETTE + [
               "set datafile missing '-'", "set multiplot layout 1,2 title " + gp_quote(title),
               "set logscale x 2", "set logscale y 2", f"set xrange [{p0 / 1.2:g}:{pmax * 1.2:g}]", "set grid",
               "set xlabel 'ranks'", f"set ylabel 'speedup over {p0} rank(s)'", "set key top left",
               f"plot x / {p0} with lines dt 2 lc rgb '#7f7f7f' title 'ideal', "
               f"'{stem}.dat' using 1:3 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'whole fit'",
               "unset logscale y", "set yrange [0:*]", "set ylabel 'parallel efficiency'", "set key bottom left",
               "plot 1 with lines dt 2 lc rgb '#7f7f7f' notitle, "
               f"'{stem}.dat' using 1:4 with linespoints lw 2 pt 7 lc rgb '#1f77b4' title 'whole fit'"
               + "".join(f", '{stem}.dat' using 1:{7 + 2 * i} with linespoints lt {i + 2} pt 6 title {gp_quote(s)}"
                         for i, s in enumerate(stages)),
               "unset multiplot", "unset yrange", "unset logscale"]
    with open(os.path.join(folder, stem + ".gp"), "w") as f:
        f.write("\n".join(gp) + "\n")
    if shutil.which("gnuplot"):
        rc = subprocess.run(["gnuplot", stem + ".gp"], cwd=folder).returncode
        print(f"{'wrote' if rc == 0 else 'gnuplot failed on'} {os.path.join(folder, stem)}.png" + ("" if rc == 0 else f" (exit {rc})"))
    else:
        print(f"gnuplot not found: {os.path.join(folder, stem)}.dat and .gp written, no plot")


if __name__ == "__main__":
    main(sys.argv)
