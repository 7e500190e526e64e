#!/usr/bin/python3
"""Issue 49's speed bar for `ssdr fit --method auto`: per data set, the selection and the whole
auto fit against one default SODA fit of the same file, measured in the same run (the target:
auto <= 30x one SODA fit).

The files are the panel's (jobs/panel.py: users' CSVs with a header and empty labels on the
unlabeled rows), one regime and seed per data set. Each timing is ssdr's own (the report's
timings_s.total: the fit from reading the file to the end, MPI start-up excluded); SODA is
timed before and after auto and the faster of the two is the bar's unit.

  jobs/bench_auto.sh                          # every panel set, 5 labeled per class, 2 ranks
  RANKS=1 jobs/bench_auto.sh --sets iris,coil20 --regime 30pct
  jobs/bench_auto.sh --auto-race off          # every candidate on every fold (no racing)
Timings belong here, not in the tests. Run on an otherwise idle machine.
"""
import argparse
import json
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import panel  # noqa: E402  (the panel's data sets and its subprocess runner)


def fit(ssdr, ranks, data, method, report, timeout, extra=()):
    cmd = ["mpiexec", "-n", str(ranks), ssdr, "fit", "--data", data, "--label-column", "label",
           "--method", method, "--report", report, "--quiet"] + list(extra)
    r = panel.run(cmd, timeout)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd), panel.last_line(r.stderr, r.stdout)))
    with open(report) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.environ.get("SSDR_BUILD", "build"))
    ap.add_argument("--ranks", type=int, default=int(os.environ.get("RANKS", "2")))
    ap.add_argument("--sets", default=",".join(panel.SETS))
    ap.add_argument("--regime", default="5pc", choices=panel.REGIMES)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default="scratch/panel", help="the panel's folder (data/ reused)")
    ap.add_argument("--timeout", type=float, default=7200)
    ap.add_argument("--auto-race", default="on", choices=["on", "off"],
                    help="auto's --auto-race (off: every candidate on every fold, the cost before racing)")
    a = ap.parse_args()
    sets = [s for s in a.sets.split(",") if s]
    for s in sets:
        if s not in panel.SETS:
            ap.error("--sets: unknown data set %r; expected some of %s" % (s, ",".join(panel.SETS)))
    ssdr = os.path.join(a.build, "ssdr")
    files = panel.panel_files(a.out, sets, [a.regime], [a.seed])
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench_auto.") as work:
        for f in files:
            rep = lambda name: os.path.join(work, "%s_%s.json" % (f["set"], name))  # noqa: E731
            before = fit(ssdr, a.ranks, f["file"], "soda", rep("soda1"), a.timeout)
            # The default (on) is not passed: a binary from before racing runs the same bench.
            race = [] if a.auto_race == "on" else ["--auto-race", a.auto_race]
            auto = fit(ssdr, a.ranks, f["file"], "auto", rep("auto"), a.timeout, race)
            after = fit(ssdr, a.ranks, f["file"], "soda", rep("soda2"), a.timeout)
            soda_s = min(before["timings_s"]["total"], after["timings_s"]["total"])
            sel = auto["info"]["selection"]
            row = {"set": f["set"], "n": auto["n"], "d": auto["d"], "c": auto["classes"],
                   "soda_s": soda_s, "auto_s": auto["timings_s"]["total"],
                   "selection_s": auto["timings_s"].get("selection", float("nan")),
                   "candidates": len(sel["candidates"]), "pruned": sel.get("pruned", 0), "chosen": sel["chosen"],
                   "peak_mib_soda": before["peak_memory_mib"]["max"],
                   "peak_mib_auto": auto["peak_memory_mib"]["max"]}
            row["ratio"] = row["auto_s"] / soda_s
            rows.append(row)
            print("%-14s n=%-6d d=%-5d c=%-3d soda %7.2f s  auto %8.2f s (selection %8.2f s, %d entries, "
                  "%d pruned)  = %5.1fx one SODA fit  peak %5.0f/%5.0f MiB  chose %s" %
                  (row["set"], row["n"], row["d"], row["c"], soda_s, row["auto_s"], row["selection_s"],
                   row["candidates"], row["pruned"], row["ratio"], row["peak_mib_soda"], row["peak_mib_auto"],
                   json.dumps(row["chosen"], sort_keys=True)), flush=True)
    worst = max(r["ratio"] for r in rows)
    print("largest ratio %.1fx (target <= 30x); %d rank(s), regime %s, seed %d, --auto-race %s; %s"
          % (worst, a.ranks, a.regime, a.seed, a.auto_race, panel.last_line(panel.run([ssdr, "--version"], 60).stdout)))
    return 0 if worst <= 30 else 1


if __name__ == "__main__":
    sys.exit(main())
