#!/usr/bin/env python3
"""Checks the library's layering (ARCHITECTURE.md): every `crate::` import of a file in
crates/mcpmux/src must go to a module of the same layer or a lower one, and no files may import
each other in a circle. Prints each import that breaks a rule, and exits 1 if there is one.

An import is a `use crate::…`, `use super::…` or a `crate::…` path in code (not in comments)
outside the file's `#[cfg(test)]` module; files declared under `#[cfg(test)]` are tests and are
not read. `crate::Name` (a name lib.rs re-exports) counts as an import of lib.rs. A folder's
`mod.rs` naming its own children (`mod x; pub use x::Item;`) is the folder's face, not an import:
its children may use what `mod.rs` defines.
"""

import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "mcpmux", "src")

# The layer of each top-level module, bottom (1) to top; ARCHITECTURE.md explains each.
LAYERS = {
    "defaults": 1, "sync": 1, "broadcast": 1, "terminal": 1, "redact": 1, "host": 1, "content": 1, "state": 1,
    "config": 2, "spill": 2,
    "catalog": 3,
    "policy": 4,
    "error": 5, "call": 5,
    "result": 6, "task": 6, "untrusted": 6, "resources": 6, "schema": 6, "auth": 6,
    "transport": 7,
    "connection": 8,
    "local_tools": 9,
    "hub": 10,
    "cli_support": 11,
    "lib": 11,
}


def read_files():
    files = {}
    for folder, _, names in os.walk(ROOT):
        for name in names:
            if name.endswith(".rs"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as f:
                    files[os.path.relpath(path, ROOT).replace(os.sep, "/")] = f.read()
    return files


def module_of(path):
    parts = path[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    return [] if parts == ["lib"] else parts


def test_only(files):
    """Files declared as `#[cfg(test)] mod name;`."""
    out = set()
    for path, text in files.items():
        base = module_of(path)
        for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text):
            stem = "/".join(base + [m.group(1)])
            out.update({stem + ".rs", stem + "/mod.rs"})
    return out


def expand(tree):
    """`a::{b, c::{d}}` → [`a::b`, `a::c::d`]."""
    tree = re.sub(r"\s+", "", tree)
    if "{" not in tree:
        return [tree]
    head, inner = tree[: tree.index("{")], tree[tree.index("{") + 1 : tree.rindex("}")]
    items, depth, cur = [], 0, ""
    for ch in inner:
        depth += ch == "{"
        depth -= ch == "}"
        if ch == "," and depth == 0:
            items.append(cur)
            cur = ""
        else:
            cur += ch
    if cur:
        items.append(cur)
    return [path for item in items for path in expand(head + item)]


def imports(path, text, files):
    text = re.split(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod tests", text, maxsplit=1)[0]
    # Comments (doc links among them) are not imports.
    text = re.sub(r"//.*", "", text)
    me = module_of(path)
    paths = [p for m in re.finditer(r"\buse\s+((?:crate|super|self)::[^;]*);", text) for p in expand(m.group(1))]
    paths += re.findall(r"(?<![\w:])((?:crate|super)(?:::\w+)+)", text)
    found = set()
    for p in paths:
        parts = p.split("::")
        if parts[0] == "crate":
            target = parts[1:]
        else:
            base = me[:-1] if parts[0] == "super" else me
            i = 1
            while i < len(parts) and parts[i] == "super":
                base, i = base[:-1], i + 1
            target = base + parts[i:]
        target = [t for t in target if t not in ("self", "*")]
        for n in range(len(target), 0, -1):
            stem = "/".join(target[:n])
            hit = next((c for c in (stem + ".rs", stem + "/mod.rs") if c in files), None)
            if hit:
                if hit != path:
                    found.add(hit)
                break
        else:
            # `crate::Error`: a name re-exported by lib.rs, so an import of the top.
            if parts[0] == "crate" and target and path != "lib.rs":
                found.add("lib.rs")
    return found


def layer(path):
    return LAYERS[module_of(path)[0] if module_of(path) else "lib"]


def circles(graph):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    return out


def main():
    files = read_files()
    tests = test_only(files)
    # A test module that is a folder takes its files along.
    folders = tuple(t[: -len("mod.rs")] for t in tests if t.endswith("/mod.rs"))
    tests |= {p for p in files if p.startswith(folders)} if folders else set()
    graph = {p: imports(p, t, files) for p, t in files.items() if p not in tests}
    graph = {p: {t for t in targets if t in graph} for p, targets in graph.items()}
    problems = 0
    unknown = sorted({module_of(p)[0] for p in graph if module_of(p) and module_of(p)[0] not in LAYERS})
    for name in unknown:
        print(f"module `{name}` has no layer: add it to LAYERS here and to ARCHITECTURE.md")
        problems += 1
    if unknown:
        return 1
    for path in sorted(graph):
        for target in sorted(graph[path]):
            if layer(target) > layer(path):
                print(f"up a layer: {path} (layer {layer(path)}) imports {target} (layer {layer(target)})")
                problems += 1
    for comp in circles(graph):
        print("circle: " + " -> ".join(comp))
        problems += 1
    edges = sum(len(t) for t in graph.values())
    print(f"{len(graph)} files, {edges} imports, {problems} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
