#!/usr/bin/env python3
"""The functions a program ran, hottest first, as a linker symbol-ordering file.

Usage: callgrind-order.py PROGRAM_NAME CALLGRIND_OUT...

Reads callgrind profiles (`valgrind --tool=callgrind --demangle=no`) and prints, one per line
and each once, the mangled name of every function that ran inside the object whose path ends
with PROGRAM_NAME: the most instructions of its own first (summed over the profiles), so the
code of a busy call path lies in as few pages as it can, then the rest of what ran.
`scripts/build-ordered.sh` hands the list to lld (`--symbol-ordering-file`): the kernel maps a
program's code in 64 KiB runs around each page first touched, so scattered code costs memory
far beyond its size.
"""

import re
import sys

# Callgrind compresses names: `fn=(12) name` defines id 12, a later `fn=(12)` refers to it;
# objects likewise (`ob=`). `cfn=`/`cob=` (callees) define ids in the same tables.
DEFINITION = re.compile(r"^(c?)(ob|fn)=\((\d+)\)(?: (.*))?$")
# A cost line: a position (absolute, `+N`/`-N` relative, or `*` the same), then the events;
# the first event is instructions (`Ir`).
COST = re.compile(r"^(?:[+-]?\d+|\*)\s+(\d+)")


def own_costs(path, program):
    """Each function of `program` in one profile, with the instructions it ran itself."""
    objects, functions, costs = {}, {}, {}
    current_object, current_function, after_call = "", None, False
    with open(path, encoding="utf-8", errors="replace") as profile:
        for line in profile:
            line = line.rstrip("\n")
            match = DEFINITION.match(line)
            if match:
                callee, kind, ident, name = match.groups()
                table = objects if kind == "ob" else functions
                if name:
                    table[ident] = name
                if callee:
                    continue
                if kind == "ob":
                    current_object = objects.get(ident, "")
                else:
                    name = functions.get(ident, "")
                    inside = current_object.endswith(program)
                    current_function = name if inside else None
                    if current_function is not None:
                        costs.setdefault(current_function, 0)
                continue
            if line.startswith("calls="):
                # The next cost line is what that call cost, the callee's work, not ours.
                after_call = True
                continue
            cost = COST.match(line)
            if cost:
                if not after_call and current_function is not None:
                    costs[current_function] += int(cost.group(1))
                after_call = False
    return costs


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    program, totals, first_seen = sys.argv[1], {}, {}
    for path in sys.argv[2:]:
        for name, cost in own_costs(path, program).items():
            # Callgrind marks a function's recursion depth (`name'2`); addresses without a
            # symbol (`0x…`) and its own pseudo-entries (`(below main)`) name nothing to order.
            name = re.sub(r"'\d+$", "", name)
            if not name or name.startswith(("0x", "(")):
                continue
            totals[name] = totals.get(name, 0) + cost
            first_seen.setdefault(name, len(first_seen))
    for name in sorted(totals, key=lambda n: (-totals[n], first_seen[n])):
        print(name)


if __name__ == "__main__":
    main()
