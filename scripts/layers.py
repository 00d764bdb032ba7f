#!/usr/bin/env python3
"""Checks the layering of every crate of the workspace (ARCHITECTURE.md): every `crate::` import
of a file of a crate must go to a module of the same layer or a lower one, and no files may
import each other in a circle. Each crate's layers are declared here, in CRATES, beside the
library's; a crate under crates/ that is not declared is a problem too. Prints each import that
breaks a rule, and exits 1 if there is one.

A crate's files are those its root (`lib.rs` or `main.rs`) reaches through `mod` declarations,
so a package's library and its binary are two crates. An import is a `use crate::…`,
`use super::…` or a `crate::…` path in code (not in comments) outside the file's `#[cfg(test)]`
module; files declared under `#[cfg(test)]` are tests and are not read. `crate::Name` (a name
the root re-exports or defines) counts as an import of the root, which is the top layer. A
folder's `mod.rs` naming its own children (`mod x; pub use x::Item;`) is the folder's face, not
an import: its children may use what `mod.rs` defines.
"""

import os
import re
import sys

CRATES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates")

# Each crate: its source folder, its root file, and the layer of each top-level module, bottom (1)
# to top (the root). ARCHITECTURE.md explains each.
CRATES = {
    # The library.
    "mcpmux": ("mcpmux/src", "lib.rs", {
        "defaults": 1, "platform": 1, "http_body": 1, "sync": 1, "broadcast": 1, "terminal": 1, "redact": 1, "host": 1, "content": 1, "state": 1,
        "config": 2, "spill": 2,
        "catalog": 3,
        "policy": 4,
        "error": 5, "call_options": 5,
        "result": 6, "task": 6, "telemetry": 6, "untrusted": 6, "listings": 6, "schema": 6, "auth": 6,
        "transport": 7, "rmcp_model": 7,
        "connection": 8,
        "local_tools": 9,
        "hub": 10,
        "cli_support": 11, "lib": 11,
    }),
    # `mcpmux serve`: words and counters; the door's parts; what a session may see; the routes;
    # the session; the handler; the ways in; HTTP over them all.
    "mcpmux-gateway": ("mcpmux-gateway/src", "lib.rs", {
        "failures": 1, "trace": 1, "paging": 1, "progress": 1, "levels": 1, "metrics": 1, "guard": 1,
        "rate_limit": 1, "access_log": 1, "deadlines": 1, "one_write": 1, "outbox": 1, "post_head": 1,
        "access": 2, "oauth": 2, "passthrough": 2, "client_rounds": 2, "search": 2, "client_wire": 2,
        "identity": 3, "view": 3, "relay": 3, "options": 3,
        "watchers": 4, "subscriptions": 4, "upstream_tasks": 4, "resources_prompts": 4, "sessions": 4, "door": 4,
        "notices": 5, "session": 5,
        "handler": 6,
        "reload": 7, "connections": 7, "sse": 7, "stdio": 7, "inline": 7, "handshake": 7,
        "http": 8,
        "lib": 9,
    }),
    # The `mcpmux` binary: the terminal and the process; how a command fails; the commands; the
    # log subscriber (the serve command's access log among it); main.
    "mcpmux-cli": ("mcpmux-cli/src", "main.rs", {
        "output": 1, "arguments": 1, "runtime": 1, "telemetry": 1, "spinner": 1, "demo": 1,
        "console": 1, "progress": 1,
        "failure": 2, "completions": 2, "form": 2, "sampling": 2,
        "agent": 3, "auth": 3, "edit": 3, "get": 3, "prompts": 3, "resources": 3, "secret": 3,
        "serve": 3, "trust": 3, "listing": 3,
        "logging": 4,
        "main": 5,
    }),
    "mcpmux-agent": ("mcpmux-agent/src", "lib.rs", {
        "transcript": 1, "search": 1,
        "provider": 2,
        "agent": 3,
        "lib": 4,
    }),
    # The Python package's native module: values and errors across the border, the runtime;
    # results and awaiting; events, Python tool sources, host callbacks, resources and
    # prompts, calls with progress; the hub handle.
    "mcpmux-python": ("mcpmux-python/src", "lib.rs", {
        "convert": 1, "errors": 1, "runtime": 1, "callback": 1,
        "result": 2, "awaitable": 2, "config": 2,
        "events": 3, "sources": 3, "host": 3, "resources": 3, "progress": 3,
        "hub": 4,
        "agent": 5, "search": 5, "reload": 5,
        "lib": 6,
    }),
    "mcpmux-testserver": ("mcpmux-testserver/src", "main.rs", {
        "asking": 1, "conformance": 1, "dpop": 1, "faults": 1, "prompts": 1,
        "oauth": 2,
        "cli": 3,
        "gate": 4, "server": 4,
        "hostile": 5, "many": 5, "tools": 5, "ws": 5,
        "stdio": 6, "http": 6,
        "main": 7,
    }),
    "mcpmux-testmodel": ("mcpmux-testmodel/src", "lib.rs", {
        "ids": 1, "script": 1, "stream": 1, "wire": 1,
        "checks": 2, "openai": 2, "anthropic": 2,
        "server": 3,
        "lib": 4,
    }),
    # The bench's library (the peer clients' shared parts) and its binary.
    "mcpmux-bench": ("mcpmux-bench/src", "lib.rs", {
        "memory": 1, "clients": 1,
        "peer_client": 2,
        "floor": 3,
        "lib": 4,
    }),
    "mcpmux-bench (bin)": ("mcpmux-bench/src", "main.rs", {
        "programs": 1,
        "cli": 2, "gateway": 2, "peers": 2, "result": 2, "sandbox": 2, "search": 2, "tracing_cost": 2,
        "main": 3,
    }),
    "mcpmux-test-support": ("mcpmux-test-support/src", "lib.rs", {
        "poll": 1, "pty": 1,
        "servers": 2, "procs": 2, "call_log": 2,
        "hub": 3, "cli": 3,
        "sdk": 4,
        "lib": 5,
    }),
    "mcpmux-demo": ("mcpmux-demo/src", "lib.rs", {"lib": 1}),
    "mcpmux-conformance": ("mcpmux-conformance/src", "main.rs", {"main": 1}),
}


def read_files(src, root):
    """The files the crate rooted at `src/root` reaches through `mod` declarations."""
    files, pending = {}, [root]
    while pending:
        rel = pending.pop()
        path = os.path.join(src, rel)
        if rel in files or not os.path.exists(path):
            continue
        with open(path, encoding="utf-8") as f:
            files[rel] = f.read()
        # The children of the root and of a `mod.rs` live beside it; of `a.rs`, in `a/`.
        folder = os.path.dirname(rel) if rel == root or rel.endswith("mod.rs") else rel[:-3]
        code = re.sub(r"//.*", "", files[rel])
        for m in re.finditer(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", code, re.M):
            stem = f"{folder}/{m.group(1)}" if folder else m.group(1)
            pending += [stem + ".rs", stem + "/mod.rs"]
    return files


def module_of(path, root):
    parts = path[:-3].split("/")
    if parts[-1] == "mod":
        parts = parts[:-1]
    return [] if parts == [root[:-3]] else parts


def test_only(files, root):
    """Files declared as `#[cfg(test)] mod name;`."""
    out = set()
    for path, text in files.items():
        base = module_of(path, root)
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


def imports(path, text, files, root):
    text = re.split(r"#\[cfg\(test\)\]\s*(?:#\[[^\]]*\]\s*)*mod tests", text, maxsplit=1)[0]
    # Comments (doc links among them) are not imports.
    text = re.sub(r"//.*", "", text)
    me = module_of(path, root)
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
            # `crate::Error`: a name the root re-exports or defines, so an import of the top.
            if parts[0] == "crate" and target and path != root:
                found.add(root)
    return found


def layer(path, root, layers):
    module = module_of(path, root)
    return layers[module[0] if module else root[:-3]]


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


def check(name, src, root, layers):
    """The problems of one crate, printed; their number."""
    src = os.path.join(CRATES_DIR, src)
    files = read_files(src, root)
    tests = test_only(files, root)
    # A test module that is a folder takes its files along.
    folders = tuple(t[: -len("mod.rs")] for t in tests if t.endswith("/mod.rs"))
    tests |= {p for p in files if p.startswith(folders)} if folders else set()
    graph = {p: imports(p, t, files, root) for p, t in files.items() if p not in tests}
    graph = {p: {t for t in targets if t in graph} for p, targets in graph.items()}
    problems = 0
    unknown = sorted({module_of(p, root)[0] for p in graph if module_of(p, root)} - set(layers))
    for module in unknown:
        print(f"{name}: module `{module}` has no layer: add it to CRATES here and to ARCHITECTURE.md")
        problems += 1
    if unknown:
        return problems
    for path in sorted(graph):
        for target in sorted(graph[path]):
            if layer(target, root, layers) > layer(path, root, layers):
                print(
                    f"{name}: up a layer: {path} (layer {layer(path, root, layers)}) imports "
                    f"{target} (layer {layer(target, root, layers)})"
                )
                problems += 1
    for comp in circles(graph):
        print(f"{name}: circle: " + " -> ".join(comp))
        problems += 1
    edges = sum(len(t) for t in graph.values())
    print(f"{name}: {len(graph)} files, {edges} imports, {problems} problems")
    return problems


def main():
    problems = 0
    declared = {(src, root) for src, root, _ in CRATES.values()}
    for folder in sorted(os.listdir(CRATES_DIR)):
        for root in ("lib.rs", "main.rs"):
            src = f"{folder}/src"
            if os.path.exists(os.path.join(CRATES_DIR, src, root)) and (src, root) not in declared:
                print(f"crate {folder} ({root}) has no layers: add it to CRATES here and to ARCHITECTURE.md")
                problems += 1
    for name, (src, root, layers) in CRATES.items():
        problems += check(name, src, root, layers)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
