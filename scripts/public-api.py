#!/usr/bin/env python3
"""The public API of the crates others embed, checked against a committed snapshot.

Each crate's face (every public path with its kind and signature: modules, types, their public
fields, variants and methods, traits, functions, constants, the traits a type implements) is
read from rustdoc's JSON output and compared with `crates/<crate>/public-api.txt`. A change to
the face then shows in review as a diff of that file, never by accident.

    scripts/public-api.py            check every crate (exit 1 with a diff when one changed)
    scripts/public-api.py --bless    write the snapshots anew (commit them with the change)
    scripts/public-api.py -p mcpmux  one crate only

rustdoc's JSON output is unstable: `RUSTC_BOOTSTRAP=1` lets the stable toolchain write it, and
the format's version is checked (a toolchain with another one is an error naming it, not a
silent diff). Blanket impls (`impl<T> From<T> for T`) and the auto traits other than `Send` and
`Sync` are left out: they follow from the rest and would only add noise.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The crates a harness embeds (or builds on), each with its committed snapshot.
CRATES = {
    "mcpmux": ROOT / "crates/mcpmux/public-api.txt",
    "mcpmux-gateway": ROOT / "crates/mcpmux-gateway/public-api.txt",
}
# The rustdoc JSON format versions this reader was written against (rustc 1.95 writes 57).
FORMATS = {57}
# Crates whose types are written by their name alone (`String`, `Option`, `Arc`).
STD = {"std", "core", "alloc"}
# The auto traits a caller can rely on; the others (`Unpin`, `UnwindSafe`, …) are noise.
AUTO_KEPT = {"Send", "Sync"}


def rustdoc_json(crate: str) -> dict:
    """Runs rustdoc for `crate`'s library and returns its JSON output."""
    env = dict(os.environ, RUSTC_BOOTSTRAP="1")
    cmd = ["cargo", "rustdoc", "--quiet", "-p", crate, "--lib", "--",
           "-Z", "unstable-options", "--output-format", "json"]
    subprocess.run(cmd, cwd=ROOT, env=env, check=True)
    target = Path(env.get("CARGO_TARGET_DIR", ROOT / "target"))
    out = target / "doc" / (crate.replace("-", "_") + ".json")
    return json.loads(out.read_text())


class Face:
    """One crate's public paths, rendered as sorted lines."""

    def __init__(self, doc: dict):
        if doc["format_version"] not in FORMATS:
            sys.exit(f"public-api.py: rustdoc JSON format {doc['format_version']} is not one this "
                     f"script reads ({sorted(FORMATS)}); update the script for this toolchain")
        self.doc = doc
        self.index = doc["index"]
        self.paths = doc["paths"]
        self.crates = {int(k): v["name"] for k, v in doc["external_crates"].items()}
        self.crate = self.index[str(doc["root"])]["name"]
        # Every public path of every item: id -> [path, ...].
        self.reach: dict[int, list[str]] = {}
        self._walk(doc["root"], self.crate, set())
        self.canonical = {i: min(ps, key=lambda p: (p.count("::"), p)) for i, ps in self.reach.items()}
        self.lines: list[str] = []

    def _walk(self, module_id: int, prefix: str, seen: set) -> None:
        if module_id in seen:
            return
        seen = seen | {module_id}
        for item_id in self.index[str(module_id)]["inner"]["module"]["items"]:
            item = self.index.get(str(item_id))
            if item is None or item["visibility"] != "public":
                continue
            kind, inner = next(iter(item["inner"].items()))
            if kind == "use":
                target = inner["id"]
                if inner["is_glob"]:
                    if target is not None and str(target) in self.index:
                        self._walk(target, prefix, seen)
                    continue
                self._add(target, f"{prefix}::{inner['name']}", seen, external=inner["source"])
            else:
                self._add(item_id, f"{prefix}::{item['name']}", seen)

    def _add(self, item_id, path: str, seen: set, external: str | None = None) -> None:
        if item_id is None or str(item_id) not in self.index:
            # A re-export of another crate's item: its path here and what it points at.
            self.reach.setdefault(("extern", external), []).append(path)
            return
        self.reach.setdefault(item_id, []).append(path)
        item = self.index[str(item_id)]
        if "module" in item["inner"]:
            self._walk(item_id, path, seen)

    # Types and signatures.

    def name_of(self, type_id, written: str) -> str:
        if type_id is not None and type_id in self.canonical:
            return self.canonical[type_id]
        entry = self.paths.get(str(type_id)) if type_id is not None else None
        if entry is None:
            return written
        crate = self.crates.get(entry["crate_id"], self.crate)
        if entry["crate_id"] == 0:
            return "::".join(entry["path"])
        if crate in STD:
            # `String`, `Arc`, `Duration` by name; an `Error` by its module (`io::Error`).
            if entry["path"][-1] == "Error" and len(entry["path"]) > 2:
                return f"{entry['path'][1]}::Error"
            return entry["path"][-1]
        # Another crate's item by its crate and name: its definition path names private
        # modules that move without the face changing.
        return f"{entry['path'][0]}::{entry['path'][-1]}"

    def args(self, args) -> str:
        if not args:
            return ""
        if "angle_bracketed" in args:
            parts = []
            for arg in args["angle_bracketed"]["args"]:
                if "type" in arg:
                    parts.append(self.ty(arg["type"]))
                elif "lifetime" in arg:
                    parts.append(arg["lifetime"])
                elif "const" in arg:
                    parts.append(arg["const"].get("expr", "_"))
                else:
                    parts.append("_")
            for c in args["angle_bracketed"]["constraints"]:
                binding = c["binding"]
                if "equality" in binding:
                    value = binding["equality"]
                    value = self.ty(value["type"]) if "type" in value else value.get("constant", {}).get("expr", "_")
                    parts.append(f"{c['name']} = {value}")
                else:
                    parts.append(f"{c['name']}: {self.bounds(binding['constraint'])}")
            return f"<{', '.join(parts)}>" if parts else ""
        if "parenthesized" in args:
            p = args["parenthesized"]
            out = f"({', '.join(self.ty(t) for t in p['inputs'])})"
            return out + (f" -> {self.ty(p['output'])}" if p["output"] else "")
        return ""

    def path(self, p) -> str:
        return self.name_of(p["id"], p["path"]) + self.args(p.get("args"))

    def bounds(self, bounds) -> str:
        out = []
        for b in bounds:
            if "trait_bound" in b:
                tb = b["trait_bound"]
                hrtb = self.generic_params(tb["generic_params"])
                prefix = f"for{hrtb} " if hrtb else ""
                modifier = {"maybe": "?", "maybe_const": "~const "}.get(tb["modifier"], "")
                out.append(prefix + modifier + self.path(tb["trait"]))
            elif "outlives" in b:
                out.append(b["outlives"])
            else:
                out.append("use<..>")
        return " + ".join(out)

    def ty(self, t) -> str:
        kind, v = next(iter(t.items()))
        if kind == "resolved_path":
            return self.path(v)
        if kind == "dyn_trait":
            parts = [self.path(x["trait"]) for x in v["traits"]]
            if v.get("lifetime"):
                parts.append(v["lifetime"])
            return "dyn " + " + ".join(parts)
        if kind in ("generic", "primitive"):
            return v
        if kind == "borrowed_ref":
            lt = f"{v['lifetime']} " if v["lifetime"] else ""
            return f"&{lt}{'mut ' if v['is_mutable'] else ''}{self.ty(v['type'])}"
        if kind == "raw_pointer":
            return f"*{'mut' if v['is_mutable'] else 'const'} {self.ty(v['type'])}"
        if kind == "tuple":
            return f"({', '.join(self.ty(x) for x in v)}{',' if len(v) == 1 else ''})"
        if kind == "slice":
            return f"[{self.ty(v)}]"
        if kind == "array":
            return f"[{self.ty(v['type'])}; {v['len']}]"
        if kind == "impl_trait":
            return "impl " + self.bounds(v)
        if kind == "infer":
            return "_"
        if kind == "function_pointer":
            sig = v["sig"]
            ins = ", ".join(self.ty(x[1]) for x in sig["inputs"])
            out = f" -> {self.ty(sig['output'])}" if sig["output"] else ""
            return f"fn({ins}){out}"
        if kind == "qualified_path":
            trait = f" as {self.path(v['trait'])}" if v.get("trait") else ""
            return f"<{self.ty(v['self_type'])}{trait}>::{v['name']}{self.args(v.get('args'))}"
        if kind == "pat":
            return self.ty(v["type"])
        return json.dumps(t, sort_keys=True)

    def generic_params(self, params) -> str:
        out = []
        for p in params:
            kind, v = next(iter(p["kind"].items()))
            if kind == "lifetime":
                out.append(p["name"] + (": " + " + ".join(v["outlives"]) if v["outlives"] else ""))
            elif kind == "type":
                if v.get("is_synthetic"):
                    continue  # `impl Trait` in argument position: shown where it is written
                b = self.bounds(v["bounds"])
                d = f" = {self.ty(v['default'])}" if v.get("default") else ""
                out.append(p["name"] + (f": {b}" if b else "") + d)
            elif kind == "const":
                out.append(f"const {p['name']}: {self.ty(v['type'])}")
        return f"<{', '.join(out)}>" if out else ""

    def where(self, generics) -> str:
        preds = []
        for w in generics["where_predicates"]:
            if "bound_predicate" in w:
                bp = w["bound_predicate"]
                preds.append(f"{self.ty(bp['type'])}: {self.bounds(bp['bounds'])}")
            elif "lifetime_predicate" in w:
                lp = w["lifetime_predicate"]
                preds.append(f"{lp['lifetime']}: {' + '.join(lp['outlives'])}")
            elif "eq_predicate" in w:
                ep = w["eq_predicate"]
                preds.append(f"{self.ty(ep['lhs'])} = {json.dumps(ep['rhs'], sort_keys=True)}")
        return f" where {', '.join(preds)}" if preds else ""

    def fn_sig(self, name: str, f) -> str:
        h = f["header"]
        quals = "".join(q for q, on in (("const ", h["is_const"]), ("async ", h["is_async"]),
                                         ("unsafe ", h["is_unsafe"])) if on)
        ins = []
        for arg_name, t in f["sig"]["inputs"]:
            if arg_name == "self":
                ins.append({"&Self": "&self", "&mut Self": "&mut self", "Self": "self"}.get(self.ty(t), f"self: {self.ty(t)}"))
            else:
                ins.append(f"{arg_name}: {self.ty(t)}")
        out = f" -> {self.ty(f['sig']['output'])}" if f["sig"]["output"] else ""
        return f"{quals}fn {name}{self.generic_params(f['generics']['params'])}({', '.join(ins)}){out}{self.where(f['generics'])}"

    # Items.

    def emit(self, line: str) -> None:
        self.lines.append(line)

    def fields(self, ids, stripped: bool, tuple_like: bool) -> str:
        parts = []
        for fid in ids:
            if fid is None:
                parts.append("_")
                continue
            f = self.index[str(fid)]
            t = self.ty(f["inner"]["struct_field"])
            parts.append(t if tuple_like else f"{f['name']}: {t}")
        if stripped:
            parts.append("..")
        return f"({', '.join(parts)})" if tuple_like else "{ " + ", ".join(parts) + " }"

    def attrs(self, item) -> str:
        return "#[non_exhaustive] " if "non_exhaustive" in item["attrs"] else ""

    def render(self) -> list[str]:
        for item_id, paths in sorted(self.reach.items(), key=lambda kv: self.canonical[kv[0]]):
            canonical = self.canonical[item_id]
            if isinstance(item_id, tuple):
                for p in sorted(paths):
                    self.emit(f"pub use {p} = {item_id[1]}")
                continue
            for p in sorted(paths):
                if p != canonical:
                    self.emit(f"pub use {p} = {canonical}")
            self.item(canonical, self.index[str(item_id)])
        # Grouped by the path each line is about (an item, then its members), so a type's
        # fields, methods and impls stay together and a moved item reads as one moved block.
        word = re.compile(re.escape(self.crate) + r"(?:::\w+)+")

        def key(line: str):
            is_impl = line.startswith("impl")
            found = word.search(line.split(" for ", 1)[-1] if is_impl else line)
            return (found.group(0) if found else "", is_impl, line)

        return sorted(set(self.lines), key=key)

    def item(self, path: str, item) -> None:
        kind, v = next(iter(item["inner"].items()))
        if kind == "module":
            self.emit(f"pub mod {path}")
        elif kind == "function":
            self.emit(f"pub {self.fn_sig(path, v)}")
        elif kind == "constant":
            self.emit(f"pub const {path}: {self.ty(v['type'])}")
        elif kind == "static":
            self.emit(f"pub static {path}: {self.ty(v['type'])}")
        elif kind == "type_alias":
            self.emit(f"pub type {path}{self.generic_params(v['generics']['params'])} = {self.ty(v['type'])}")
        elif kind == "struct":
            g = self.generic_params(v["generics"]["params"]) + self.where(v["generics"])
            sk, sv = next(iter(v["kind"].items())) if isinstance(v["kind"], dict) else (v["kind"], None)
            if sk == "plain":
                self.emit(f"{self.attrs(item)}pub struct {path}{g} {self.fields_public(sv['fields'], sv['has_stripped_fields'])}")
            elif sk == "tuple":
                self.emit(f"{self.attrs(item)}pub struct {path}{g}{self.fields(sv, False, True)}")
            else:
                self.emit(f"{self.attrs(item)}pub struct {path}{g}")
            self.impls(path, v["impls"])
        elif kind == "union":
            self.emit(f"pub union {path}")
            self.impls(path, v["impls"])
        elif kind == "enum":
            g = self.generic_params(v["generics"]["params"]) + self.where(v["generics"])
            self.emit(f"{self.attrs(item)}pub enum {path}{g}")
            for vid in v["variants"]:
                var = self.index[str(vid)]
                vk, vv = next(iter(var["inner"]["variant"]["kind"].items())) if isinstance(var["inner"]["variant"]["kind"], dict) else ("plain", None)
                shape = ""
                if vk == "tuple":
                    shape = self.fields(vv, False, True)
                elif vk == "struct":
                    shape = " " + self.fields(vv["fields"], vv["has_stripped_fields"], False)
                self.emit(f"{self.attrs(var)}pub variant {path}::{var['name']}{shape}")
            self.impls(path, v["impls"])
        elif kind == "trait":
            g = self.generic_params(v["generics"]["params"])
            b = self.bounds(v["bounds"])
            self.emit(f"pub {'unsafe ' if v['is_unsafe'] else ''}trait {path}{g}{': ' + b if b else ''}")
            for iid in v["items"]:
                self.assoc(path, self.index[str(iid)], in_trait=True)
        elif kind == "macro":
            self.emit(f"pub macro {path}")
        else:
            self.emit(f"pub {kind} {path}")

    def fields_public(self, ids, stripped: bool) -> str:
        public = [i for i in ids if self.index[str(i)]["visibility"] == "public"]
        return self.fields(public, stripped or len(public) != len(ids), False)

    def assoc(self, owner: str, item, in_trait: bool) -> None:
        if not in_trait and item["visibility"] != "public":
            return
        kind, v = next(iter(item["inner"].items()))
        name = f"{owner}::{item['name']}"
        if kind == "function":
            provided = " {}" if in_trait and v["has_body"] else ""
            self.emit(f"pub {self.fn_sig(name, v)}{provided}")
        elif kind == "assoc_const":
            self.emit(f"pub const {name}: {self.ty(v['type'])}")
        elif kind == "assoc_type":
            b = self.bounds(v["bounds"])
            d = f" = {self.ty(v['type'])}" if v.get("type") else ""
            self.emit(f"pub type {name}{': ' + b if b else ''}{d}")

    def impls(self, path: str, impl_ids) -> None:
        for iid in impl_ids:
            imp = self.index[str(iid)]["inner"]["impl"]
            if imp["blanket_impl"] is not None:
                continue
            g = self.generic_params(imp["generics"]["params"])
            if imp["trait"] is None:
                for aid in imp["items"]:
                    self.assoc(path, self.index[str(aid)], in_trait=False)
                continue
            trait = self.path(imp["trait"])
            if imp["is_synthetic"] and imp["trait"]["path"] not in AUTO_KEPT:
                continue
            neg = "!" if imp["is_negative"] else ""
            self.emit(f"impl{g} {neg}{trait} for {self.ty(imp['for'])}{self.where(imp['generics'])}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bless", action="store_true", help="write the snapshots anew")
    parser.add_argument("-p", dest="crates", action="append", choices=sorted(CRATES),
                        help="check this crate only (repeatable)")
    parser.add_argument("--json", type=Path, help="read this rustdoc JSON file instead of running rustdoc (one crate)")
    args = parser.parse_args()
    crates = args.crates or sorted(CRATES)
    if args.json and len(crates) != 1:
        parser.error("--json needs exactly one -p CRATE")
    failed = []
    for crate in crates:
        doc = json.loads(args.json.read_text()) if args.json else rustdoc_json(crate)
        face = Face(doc).render()
        text = "".join(line + "\n" for line in face)
        snapshot = CRATES[crate]
        rel = snapshot.relative_to(ROOT)
        if args.bless:
            snapshot.write_text(text)
            print(f"public-api: {rel}: {len(face)} lines written")
            continue
        old = snapshot.read_text() if snapshot.exists() else ""
        if old == text:
            print(f"public-api: {crate}: unchanged ({len(face)} lines)")
            continue
        failed.append(crate)
        sys.stdout.writelines(difflib.unified_diff(
            old.splitlines(keepends=True), text.splitlines(keepends=True),
            fromfile=f"{rel} (committed)", tofile=f"{crate} (built now)"))
    if failed:
        print(f"\npublic-api: the public API of {', '.join(failed)} changed (diff above). If the "
              "change is meant, run `scripts/public-api.py --bless` and commit the snapshot with it.",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
