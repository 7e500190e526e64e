"""The cost model of docs/scaling.md: per-stage time of a SODA fit on P ranks, and the memory
per node, from the formulas of that page.

    /usr/bin/python3 jobs/cost_model.py            # the page's projection table
    /usr/bin/python3 jobs/cost_model.py --n 1e8 --f 0.2 --nodes 128

Rates: NN-descent 310 µs·core per sample at d' = 214 (the 10.5 M run of docs/scale.md);
S = 230 block products for the propagation (block CG, the c class columns per product; 228
measured with -log_view at n_t = 70 000, independent of n) on the graph cut by its
Cuthill-McKee level order (the default "levels": partners 1 + P/4 and halo 1/2.5 of file
order's, measured at P = 8 to 256 by jobs/partners.py on Fashion-MNIST's 70 000-vertex graph)
or partitioned by PT-Scotch (--partitioner ptscotch: halo 1/18 of file order's, partners
P - 1 up to P = 8, measured with -log_view);
dgemm 40 GFLOP/s per core; alpha, link bandwidth and file-system bandwidth as arguments.
"""
import argparse
import math


def project(n, F, nodes, cores=32, d=784, dp=214, k=8, c=10, link=12.5e9, alpha=1e-6, dgemm=40e9, fs=1e12,
            products=230, candidates=50, rounds=10, partitioner="levels"):
    P = nodes * cores
    nt = F * n
    bw = link / cores  # a rank's share of its node's link
    t = {}
    t["read"] = n * d / min(fs, nodes * link)
    t["preprocess"] = (nt * d * d / P + 9 * d ** 3 + 2 * n * d * dp / P) / dgemm + 16 * d * d / bw \
        + alpha * 2 * math.log2(P)
    t["knn_graph"] = nt * 310e-6 * (dp / 214) / P + rounds * (
        min(nt * (P - 1) / P, nt / P * candidates) * dp * 4 / bw + alpha * (P - 1))
    # The graph renumbered before the solve (graph::renumber_for_locality). "levels": the
    # Cuthill-McKee level order cut into P ranges; a range borders the ranges of its own and
    # the adjacent levels, about P/4 of them on Fashion-MNIST's graph (a kNN graph has few,
    # wide levels: 15 at 70 000 vertices), and fetches 1/2.5 of file order's halo (both by
    # jobs/partners.py at P = 8..256). PT-Scotch: 1/18 of the halo, partners P - 1 up to
    # P = 8 (-log_view). Block CG: one product carries the c class columns (the outlier
    # class's column is derived).
    partners = min(P - 1, 2 * k * nt / P) if partitioner == "ptscotch" else min(P - 1, 1 + P / 4, 2 * k * nt / P)
    halo = min(nt * (P - 1) / P, 2 * k * nt / P) / (18.0 if partitioner == "ptscotch" else 2.5)
    latency = products * alpha * partners + products * 2 * alpha * (math.log2(P) + 1)
    t["propagation"] = latency + products * halo * 8 * c / bw \
        + products * (4 * k + 14) * nt * c / P / 2e9
    t["propagation_latency"] = latency
    # X in its own type, the labels (int32), roles and transductive flags (one byte each) of the
    # rank's rows: nothing of size n on a rank.
    memory_rank = n * d / P + 6 * n / P + 8 * nt * dp / P + 650 * nt / P + 3 * 160 * 2 ** 20 + 24 * d * d
    return P, t, memory_rank * cores


def main():
    a = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    a.add_argument("--n", type=float)
    a.add_argument("--f", type=float, default=0.2)
    a.add_argument("--nodes", type=int)
    a.add_argument("--partitioner", choices=["levels", "ptscotch"], default="levels")
    args = a.parse_args()
    runs = [(args.n, args.f, args.nodes)] if args.n and args.nodes else [(1e7, 0.2, 16), (1e9, 0.2, 1024), (1e9, 1.0, 1024)]
    print("| n | F | nodes | P | read s | preprocess s | knn_graph s | propagation s (latency) | total s | GB per node |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for n, F, nodes in runs:
        P, t, mem = project(n, F, nodes, partitioner=args.partitioner)
        total = t["read"] + t["preprocess"] + t["knn_graph"] + t["propagation"]
        print(f"| {n:.0e} | {F} | {nodes} | {P} | {t['read']:.2f} | {t['preprocess']:.2f} | {t['knn_graph']:.1f} | "
              f"{t['propagation']:.1f} ({t['propagation_latency']:.1f}) | {total:.0f} | {mem / 1e9:.1f} |")


if __name__ == "__main__":
    main()
