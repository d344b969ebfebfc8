"""Exact digit-range grammars: for random integer and number bounds, every
integer (and a grid of decimals) near the bounds is accepted by the
converter's grammar exactly when it lies within them.
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
        scale = r.choice([10, 1000, 10 ** 6, 10 ** 17])
        lo, hi = sorted(r.randint(-scale, scale) for _ in range(2))
        kind = r.choice(["integer", "number"])
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
                texts += [str(Decimal(x) + Decimal(f)) for f in ("0.5", "0.0", "-0.25", "0.001")]
            for t in texts:
                want = inside(Decimal(t))
                if t.startswith("-0") and Decimal(t) == 0:
                    continue  # "-0": not canonical
                got = g.accepts(t)
                checked += 1
                if got != want:
                    fails += 1
                    if fails < 10:
                        print("FAIL:", json.dumps(s), t, "accepted" if got else "refused")
    print("json_schema_ranges: %d values checked against %d bound pairs; %d failures" % (checked, n, fails))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
