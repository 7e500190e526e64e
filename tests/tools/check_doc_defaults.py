"""The docs and the help texts agree on every default they both state (ctest cli.docs).

Reads every command's --help (boost's "(=X)" and the parameter table's "default X]") and
every claim in README.md and docs/*.md of the forms
  `--option VALUE...` (default X        `--option X`, the default        `--option X` (the default
and checks that X is the help's default (compared on their first word; "c−1" and "c-1" alike).
Usage: check_doc_defaults.py SSDR_BINARY REPO_ROOT. Prints each claim checked; exits 1 on a
disagreement, naming the page, line, option and both values.
"""
import os
import re
import subprocess
import sys

COMMANDS = ["fit", "evaluate", "transform", "predict", "convert", "plot", "experiment"]


def help_defaults(ssdr):
    defaults = {}
    for cmd in COMMANDS:
        text = subprocess.run([ssdr, cmd, "--help"], stdout=subprocess.PIPE, check=True).stdout.decode()
        # Join each option's wrapped help into one entry.
        entries = re.split(r"\n(?=  -)", text)
        for e in entries:
            m = re.match(r"\s*(?:-\w, )?--([a-z0-9-]+)(?: arg)?(?: \(=([^)]*)\))?(.*)", e, re.S)
            if not m:
                continue
            name, boost, rest = m.group(1), m.group(2), " ".join(m.group(3).split())
            table = re.search(r"default ([^\]]+)\]\s*$", rest) or re.search(r"\(default:? ([^)]+)\)", rest)
            value = boost if boost is not None else (table.group(1) if table else None)
            if value is not None:
                defaults.setdefault(name, value.strip())
    return defaults


def first_word(v):
    v = v.replace("\u2212", "-").strip().strip("`").lower()
    return re.split(r"[\s,;:()]+", v)[0] if v else v


def main():
    ssdr, root = sys.argv[1], sys.argv[2]
    defaults = help_defaults(ssdr)
    pages = [os.path.join(root, "README.md")] + sorted(
        os.path.join(root, "docs", f) for f in os.listdir(os.path.join(root, "docs")) if f.endswith(".md"))
    claims = [
        re.compile(r"`--([a-z0-9-]+)[^`]*`[^`().;]{0,40}\((?:default:?|the default)\s+([^),;]+)"),
        re.compile(r"`--([a-z0-9-]+) ([^` |]+)`,? \(?(?:the default)"),
    ]
    bad = checked = 0
    for page in pages:
        if os.path.basename(page) == "methods.md":
            continue  # generated from the same table (docs.sh checks it byte for byte)
        for no, line in enumerate(open(page, encoding="utf-8"), start=1):
            for pat in claims:
                for m in pat.finditer(line):
                    option, claim = m.group(1), m.group(2)
                    if option not in defaults:
                        continue
                    checked += 1
                    where = "%s:%d" % (os.path.relpath(page, root), no)
                    if first_word(claim) == first_word(defaults[option]) or (
                            first_word(claim) in ("c-1",) and defaults[option] == "0"):
                        print("ok: %s --%s: default %s" % (where, option, defaults[option]))
                    else:
                        bad += 1
                        print("DIFFERS: %s says --%s defaults to '%s'; its --help says '%s'"
                              % (where, option, claim.strip(), defaults[option]))
    print("%d default claims checked, %d differ" % (checked, bad))
    return 1 if bad or checked == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
