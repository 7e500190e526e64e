"""Every public declaration of include/ssdr/ has a doc comment.

A function, class, struct, enum or alias declared in a public header must be preceded by a
Doxygen comment (/// or /** */) or carry a trailing ///< one. Reports each offender as
FILE:LINE: the declaration, and exits 1 when there is any. Usage: check_doc_comments.py INCLUDE_DIR
Heuristic by design (no C++ parser): declarations are found line by line at namespace or class
scope, outside private and protected sections; a declaration directly after a documented one
(an overload set or a group under one comment, as Doxygen's grouping) counts as documented.
"""
import pathlib
import re
import sys

DECL = re.compile(
    r"^\s*(?:template\s*<[^>]*>\s*)?"
    r"(?:(?:inline|static|constexpr|virtual|explicit|friend|extern|\[\[nodiscard\]\])\s+)*"
    r"(?:(?:class|struct|enum(?:\s+class)?)\s+[A-Za-z_]\w*\s*(?:[:{]|$)"  # a type
    r"|using\s+[A-Za-z_]\w*\s*="  # an alias
    r"|[A-Za-z_][\w:<>,\s\*&]*?[\s\*&]~?[A-Za-z_]\w*\s*\(|~?[A-Z]\w*\s*\()"  # a function or constructor
)
SKIP = re.compile(r"^\s*(?:return|if|for|while|switch|else|case|namespace|public:|private:|protected:|#|//|\}|=|delete|default|SSDR_)")


def strip_strings(line):
    return re.sub(r'"(?:\\.|[^"\\])*"', '""', line)


def check(path):
    bad = []
    lines = path.read_text().splitlines()
    depth = 0  # braces open in function bodies (inline definitions): skip their insides
    body_depth = None
    prev_documented = False  # the previous declaration line had a comment (overload sets)
    prev_was_decl = False
    in_block_comment = False
    private = False  # inside a class's private or protected section: not public API
    for i, raw in enumerate(lines):
        line = strip_strings(raw)
        stripped = line.strip()
        if in_block_comment:
            if "*/" in stripped:
                in_block_comment = False
            continue
        if stripped.startswith("/*"):
            in_block_comment = "*/" not in stripped
            continue
        opens, closes = line.count("{"), line.count("}")
        if body_depth is not None:
            depth += opens - closes
            if depth <= body_depth:
                body_depth = None
            continue
        if not stripped:
            prev_was_decl = False
            continue
        if stripped.startswith("//"):
            continue
        if stripped in ("private:", "protected:"):
            private = True
            continue
        if stripped == "public:" or stripped.startswith("};"):
            private = False
        if private:
            depth += opens - closes
            continue
        is_decl = bool(DECL.match(line)) and not SKIP.match(line) and "operator" not in line
        if is_decl:
            j = i - 1
            while j >= 0 and (lines[j].strip().startswith("template") or lines[j].strip().startswith("[[")):
                j -= 1
            above = lines[j].strip() if j >= 0 else ""
            documented = (
                above.startswith("///")
                or above.endswith("*/")
                or "///<" in raw
                or (prev_was_decl and prev_documented)
                or re.search(r"=\s*(delete|default)\s*;", raw) is not None
                or re.match(r"^\s*~\w+\(\)", raw) is not None  # destructors
                or re.match(r"^\s*(class|struct)\s+\w+\s*;", raw) is not None  # forward declarations
            )
            if not documented:
                bad.append(f"{path}:{i + 1}: {stripped}")
            prev_documented = documented
            prev_was_decl = True
        else:
            prev_was_decl = prev_was_decl and stripped.endswith((",", "(")) or stripped.startswith((":", "const", "int", "double"))
        # An inline function body: skip what is inside it.
        if opens > closes and "(" in line and not re.match(r"^\s*(namespace|class|struct|enum|union)\b", line) \
                and not stripped.startswith(("class ", "struct ")) and ")" in line:
            body_depth = depth
            depth += opens - closes
        else:
            depth += opens - closes
    return bad


def main():
    root = pathlib.Path(sys.argv[1])
    headers = sorted(root.rglob("*.hpp"))
    bad = [b for h in headers for b in check(h)]
    for b in bad:
        print(b)
    print(f"{len(headers)} public headers, {len(bad)} declarations without a doc comment")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
