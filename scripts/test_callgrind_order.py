#!/usr/bin/env python3
"""Tests of callgrind-order.py on a profile written the way callgrind writes one: names
compressed to ids, callees defined in `cfn=`/`cob=` lines, the cost of a call on the line after
`calls=`, recursion marked `'2`, other objects in between. Run by scripts/test.sh."""

import importlib.util
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
SCRIPT = os.path.join(HERE, "callgrind-order.py")

PROFILE = """\
version: 1
creator: callgrind-3.19.0
positions: line
events: Ir
summary: 1000

ob=(1) /usr/lib/x86_64-linux-gnu/libc.so.6
fl=(1) ???
fn=(1) memcpy
0 500

ob=(2) /work/target/ordered/dist/bench-peer-hub
fl=(2) ???
fn=(2) _ZN4main17hAE
0 5
cob=(1)
cfn=(1)
calls=3 0
0 500
cfn=(3) _ZN3hub4call17hBE
calls=10 0
0 300
+1 2

fn=(3)
0 40
* 60
cfn=(4) _ZN3hub4call17hBE'2
calls=1 0
0 7

fn=(4)
0 7

fn=(5) _ZN4cold5setup17hCE
0 3

fn=(6) 0x00000000002c6360
0 90

fn=(7) (below main)
0 90

ob=(1)
fn=(1)
0 100

ob=(3) /work/target/ordered/dist/bench-peer-rmcp
fn=(8) _ZN4rmcp4only17hDE
0 1000
"""


def load():
    spec = importlib.util.spec_from_file_location("callgrind_order", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CallgrindOrder(unittest.TestCase):
    def setUp(self):
        handle, self.path = tempfile.mkstemp(suffix=".out")
        with os.fdopen(handle, "w") as profile:
            profile.write(PROFILE)

    def tearDown(self):
        os.unlink(self.path)

    def test_each_function_is_charged_its_own_instructions_not_its_callees(self):
        costs = load().own_costs(self.path, "bench-peer-hub")
        self.assertEqual(costs["_ZN4main17hAE"], 7)
        self.assertEqual(costs["_ZN3hub4call17hBE"], 100)
        self.assertEqual(costs["_ZN3hub4call17hBE'2"], 7)
        self.assertEqual(costs["_ZN4cold5setup17hCE"], 3)
        self.assertNotIn("memcpy", costs)
        self.assertNotIn("_ZN4rmcp4only17hDE", costs)

    def test_the_list_is_the_programs_functions_hottest_first_each_once(self):
        listed = subprocess.run(
            [sys.executable, SCRIPT, "bench-peer-hub", self.path, self.path],
            check=True,
            capture_output=True,
            text=True,
        ).stdout.split()
        self.assertEqual(
            listed, ["_ZN3hub4call17hBE", "_ZN4main17hAE", "_ZN4cold5setup17hCE"]
        )

    def test_rustc_links_in_the_order_the_list_gives(self):
        # What scripts/build-ordered.sh relies on: rustc's linker here is lld, and it takes the
        # list (a name it does not know skipped without a word).
        with tempfile.TemporaryDirectory() as scratch:
            source = os.path.join(scratch, "order.rs")
            with open(source, "w") as program:
                program.write(
                    "#[no_mangle] #[inline(never)] pub extern \"C\" fn order_first() -> u32 { 1 }\n"
                    "#[no_mangle] #[inline(never)] pub extern \"C\" fn order_second() -> u32 { 2 }\n"
                    "fn main() { std::process::exit((order_first() + order_second()) as i32 - 3) }\n"
                )
            listing = os.path.join(scratch, "order.txt")
            with open(listing, "w") as order:
                order.write("order_second\nno_such_function\norder_first\n")
            binary = os.path.join(scratch, "order")
            subprocess.run(
                [
                    "rustc", "-o", binary, source,  # unoptimised: both functions kept
                    f"-Clink-arg=-Wl,--symbol-ordering-file={listing}",
                    "-Clink-arg=-Wl,--no-warn-symbol-ordering",
                ],
                check=True,
            )
            subprocess.run([binary], check=True)
            symbols = subprocess.run(
                ["nm", binary], check=True, capture_output=True, text=True
            ).stdout.split("\n")
            address = {
                line.split()[2]: int(line.split()[0], 16)
                for line in symbols
                if line.endswith((" order_first", " order_second"))
            }
            self.assertLess(address["order_second"], address["order_first"])

    def test_without_profiles_it_says_how_to_use_it(self):
        run = subprocess.run([sys.executable, SCRIPT], capture_output=True, text=True)
        self.assertNotEqual(run.returncode, 0)
        self.assertIn("Usage", run.stderr)


if __name__ == "__main__":
    unittest.main()
