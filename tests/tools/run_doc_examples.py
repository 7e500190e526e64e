"""Runs every shell and Python block of README.md and docs/*.md as a user would (ctest
cli.doc_examples, tests/regression/doc_examples.sh).

Each block runs in its own scratch folder that looks like the repository root (build/, jobs/,
tests/, examples/, python/ are links), so the paths in the docs work as written:
  - ```sh blocks with `bash -e` (the OMPI settings of jobs/env.sh come from the block itself
    where the docs say `source jobs/env.sh`, else from the test's environment);
  - ```python blocks with `mpiexec -n 2 PYTHON block.py` and PYTHONPATH=build/python, as the
    docs' own comments say to run them.
A block must leave no file in the root that the repository's .gitignore does not cover (the
docs write their outputs under scratch/). A block that must not run here carries the line `<!-- doc-test: skip: REASON -->` just above
its fence; it is listed with its reason. Other languages (cpp, yaml, text) are not run.
Usage: run_doc_examples.py REPO_ROOT BUILD_DIR PYTHON MPIEXEC
Prints one line per block (ok / FAILED / skipped) and exits 1 when a block failed.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

# What `source jobs/env.sh` sets for Open MPI (the Python blocks' comments ask for it).
ENV_SH = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_mpi_yield_when_idle": "1",
          "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_MCA_orte_execute_quiet": "1", "OMP_NUM_THREADS": "1",
          "OPENBLAS_NUM_THREADS": "1", "SCOTCH_PTHREAD_NUMBER": "1"}

FENCE = re.compile(r"^```(\w+)\s*$")
SKIP = re.compile(r"^<!-- doc-test: skip: (.+?) -->\s*$")


def blocks(path):
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            skip = SKIP.match(lines[i - 1]) if i > 0 else None
            yield i + 1, m.group(1), "\n".join(lines[i + 1:j]) + "\n", skip.group(1) if skip else None
            i = j
        i += 1


LINKS = ("jobs", "tests", "examples", "python", "docs", "cmake", "build")


def untracked(root, work):
    """The files and folders a block left in its scratch root (the repository root as the user
    runs the docs) that the repository's .gitignore does not cover: after the docs' examples,
    `git status` lists no new file. Paths relative to the root, folders with a trailing '/'."""
    left = []
    for name in sorted(os.listdir(work)):
        if name in LINKS or name in ("block.sh", "block.py"):
            continue
        left.append(name + "/" if os.path.isdir(os.path.join(work, name)) else name)
    if not left:
        return []
    p = subprocess.run(["git", "-C", root, "check-ignore", "--no-index", "--stdin"], input="\n".join(left) + "\n",
                       stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    if p.returncode > 1:  # git missing or not a checkout: nothing to check against
        return []
    ignored = set(p.stdout.split("\n"))
    return [f for f in left if f not in ignored]


def main():
    root, build, python, mpiexec = sys.argv[1:5]
    pages = [os.path.join(root, "README.md")] + sorted(
        os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    failed = ran = 0
    skipped = []
    for page in pages:
        rel = os.path.relpath(page, root)
        for line, lang, code, skip in blocks(page):
            if lang not in ("sh", "bash", "python"):
                continue
            where = "%s:%d [%s]" % (rel, line, lang)
            if skip:
                skipped.append((where, skip))
                print("skipped: %s: %s" % (where, skip))
                continue
            work = tempfile.mkdtemp(prefix="ssdr_doc_")
            try:
                for name in LINKS[:-1]:
                    os.symlink(os.path.join(root, name), os.path.join(work, name))
                os.symlink(build, os.path.join(work, "build"))
                # A user's shell: none of jobs/env.sh's settings unless the block sources it (a
                # block that runs mpiexec as root without it fails here as it would for them).
                env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "SSDR_"))}
                for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
                    env.pop(k, None)
                if lang == "python":
                    with open(os.path.join(work, "block.py"), "w") as f:
                        f.write(code)
                    # As the blocks' comments say: after `source jobs/env.sh`, with the build's package.
                    env.update(ENV_SH)
                    env["PYTHONPATH"] = os.path.join(build, "python")
                    cmd = [mpiexec, "-n", "2", python, "block.py"]
                else:
                    with open(os.path.join(work, "block.sh"), "w") as f:
                        f.write(code)
                    # A user's shell has /usr/bin/python3 as python3 in the docs' examples.
                    cmd = ["bash", "-e", "-o", "pipefail", "block.sh"]
                t0 = time.time()
                p = subprocess.run(cmd, cwd=work, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                   timeout=300)
                ran += 1
                left = untracked(root, work)
                if p.returncode == 0 and left:
                    failed += 1
                    print("FAILED: %s leaves files that git would list as untracked in the repository root "
                          "(write them under scratch/, or add them to .gitignore): %s" % (where, " ".join(left[:10])))
                elif p.returncode == 0:
                    print("ok: %s (%.1f s)" % (where, time.time() - t0))
                else:
                    failed += 1
                    print("FAILED: %s exited with %d:" % (where, p.returncode))
                    out = p.stdout.decode("utf-8", "replace").strip().split("\n")
                    for l in out[-15:]:
                        print("    " + l)
            except subprocess.TimeoutExpired:
                failed += 1
                print("FAILED: %s took more than 300 s" % where)
            finally:
                shutil.rmtree(work, ignore_errors=True)
    print("%d blocks run, %d failed, %d skipped (listed above with their reasons)" % (ran, failed, len(skipped)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
