#!/usr/bin/python3
"""A sparse bag-of-words-like labeled data set in LIBSVM format, for the sparse path (issue 11).

usage: /usr/bin/python3 jobs/make_sparse_bow.py OUT.libsvm [--n 100000] [--d 1000000]
           [--words 110] [--classes 20] [--topic-words 2000] [--topic-share 0.1] [--seed 1]

Each document (row) draws --words word tokens: a share --topic-share from its class's topic
(--topic-words words of the vocabulary, chosen per class, Zipf-weighted inside the topic) and
the rest from a Zipf(0.9) background over all d words (frequent "stop words" shared by every
class). A feature is log(1 + count) of a word present in the document, so a row holds about
--words non-zeros (fewer when a word repeats: ~100 with the defaults). Labels 0..c-1, classes
in turn (row i has class i mod c). Deterministic for a seed (numpy's PCG64); written in
blocks, so memory stays ~ a block of rows whatever n is. Plain text, uncompressed: ssdr reads
it in parallel by byte ranges.
"""
import argparse
import os
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--n", type=int, default=100000)
    ap.add_argument("--d", type=int, default=1000000)
    ap.add_argument("--words", type=int, default=110)
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--topic-words", type=int, default=2000)
    ap.add_argument("--topic-share", type=float, default=0.1)
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.n < a.classes or a.classes < 2 or a.d < a.topic_words + 1000 or a.words < 1 or not 0 <= a.topic_share <= 1:
        sys.exit("make_sparse_bow: need n >= classes >= 2, d >= topic-words + 1000, words >= 1, topic-share in [0, 1]")
    rng = np.random.Generator(np.random.PCG64(a.seed))
    # Background: Zipf(0.9) over a random permutation of the vocabulary.
    rank_weight = 1.0 / np.arange(1, a.d + 1) ** 0.9
    background_cdf = np.cumsum(rank_weight / rank_weight.sum())
    background_word = rng.permutation(a.d)
    # Topics: words outside the 1000 most frequent background words, Zipf(1) inside the topic.
    common = set(background_word[:1000].tolist())
    pool = np.array([w for w in rng.choice(a.d, size=min(a.d, 4 * a.classes * a.topic_words), replace=False)
                     if w not in common])
    topics = [pool[rng.choice(len(pool), size=a.topic_words, replace=False)] for _ in range(a.classes)]
    topic_weight = 1.0 / np.arange(1, a.topic_words + 1)
    topic_cdf = np.cumsum(topic_weight / topic_weight.sum())
    n_topic = int(round(a.topic_share * a.words))
    tmp = a.out + ".tmp%d" % os.getpid()
    nnz = 0
    with open(tmp, "w") as f:
        block = 4096
        for i0 in range(0, a.n, block):
            b = min(block, a.n - i0)
            labels = (np.arange(i0, i0 + b) % a.classes).astype(np.int64)
            bg = background_word[np.minimum(np.searchsorted(background_cdf, rng.random((b, a.words - n_topic))), a.d - 1)]
            tp_idx = np.minimum(np.searchsorted(topic_cdf, rng.random((b, n_topic))), a.topic_words - 1)
            tp = np.stack([topics[c] for c in labels])[np.arange(b)[:, None], tp_idx] if n_topic > 0 else np.zeros((b, 0), np.int64)
            tokens = np.sort(np.concatenate([bg, tp], axis=1), axis=1)
            lines = []
            for r in range(b):
                words, counts = np.unique(tokens[r], return_counts=True)
                nnz += len(words)
                vals = np.log1p(counts)
                lines.append(str(labels[r]) + " " + " ".join("%d:%.6g" % (w + 1, v) for w, v in zip(words, vals)))
            f.write("\n".join(lines) + "\n")
    os.replace(tmp, a.out)
    print("make_sparse_bow: wrote %s: n = %d, d = %d, c = %d, %d non-zeros (%.1f per row)" %
          (a.out, a.n, a.d, a.classes, nnz, nnz / a.n))


if __name__ == "__main__":
    main()
