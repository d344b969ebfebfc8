"""Exact digit-range grammars: for random integer and number bounds, every
integer (and a grid of decimals) near the bounds is accepted by the
converter's grammar exactly when it lies within them, read both as an exact
decimal and as a double (long fractions next to an exclusive bound round
onto it as doubles, so those must be refused).
Usage: json_schema_ranges.py CONVERTER N [SEED]"""
import json
import os
import random
import subprocess
import sys
from decimal import Decimal

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gbnf_ref  # noqa: E402


def grammar(conv, schema):
    p = subprocess.run([conv, "-"], input=json.dumps(schema).encode(), capture_output=True)
    return gbnf_ref.Grammar(p.stdout.decode()) if p.returncode == 0 else None


def main():
    conv, n = sys.argv[1], int(sys.argv[2])
    r = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    checked = fails = 0
    for _ in range(n):
        kind = r.choice(["integer", "number"])
        # bounds on numbers are supported within +-10^13, on integers +-10^18
        scale = r.choice([10, 1000, 10 ** 6, 10 ** 17 if kind == "integer" else 10 ** 12])
        lo, hi = sorted(r.randint(-scale, scale) for _ in range(2))
        s = {"type": kind}
        has_lo, has_hi = r.random() < 0.8, r.random() < 0.8
        lo_x, hi_x = r.random() < 0.5, r.random() < 0.5
        if has_lo:
            s["exclusiveMinimum" if lo_x else "minimum"] = lo
        if has_hi:
            s["exclusiveMaximum" if hi_x else "maximum"] = hi

        def inside(x):
            return ((not has_lo or (x > lo if lo_x else x >= lo)) and
                    (not has_hi or (x < hi if hi_x else x <= hi)))
        g = grammar(conv, s)
        probes = set()
        for b in (lo, hi, 0, -1, 1):
            probes.update(range(b - 12, b + 13))
        probes.update(r.randint(-scale * 10, scale * 10) for _ in range(30))
        if g is None:  # refused: only when nothing fits
            if any(inside(x) for x in probes):
                print("FAIL: refused but", s, "has members"); fails += 1
            continue
        for x in sorted(probes):
            texts = [str(x)]
            if kind == "number":
                # plain decimals (the canonical form of a bounded number has no exponent)
                texts += [format(Decimal(x) + Decimal(f), "f") for f in ("0.5", "0.0", "-0.25", "0.001")]
                # beyond a double's precision: exact decimals and doubles disagree
                texts += [format(Decimal(x) + Decimal(f), "f")
                          for f in ("0.0000000000000000001", "-0.0000000000000000001", "0.00000000001",
                                    "-0.00000000001", "0.000000000000000111", "-0.000000000000000111",
                                    "0.00000000000000011102230246251565", "-0.00000000000000011102230246251565")]
            for t in texts:
                # valid both read exactly and, as JSON parsers read a number
                # with a fraction, as a double (integers stay exact)
                want = inside(Decimal(t)) and ("." not in t or inside(float(t)))
                if t.startswith("-0") and Decimal(t) == 0:
                    continue  # "-0": not canonical
                got = g.accepts(t)
                checked += 1
                # refusing is right for a fraction beyond the 20 digits the grammar allows
                frac = len(t.split(".")[1]) if "." in t else 0
                if got != want and not (want and frac > 20):
                    fails += 1
                    if fails < 10:
                        print("FAIL:", json.dumps(s), t, "accepted" if got else "refused")
    print("json_schema_ranges: %d values checked against %d bound pairs; %d failures" % (checked, n, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
