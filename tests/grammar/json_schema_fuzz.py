"""Soundness and completeness of the JSON Schema -> GBNF converter over random
schema/document pairs.

For each random schema: sd-json_schema_check converts it; then
- soundness: random strings drawn from the grammar (random walks) and
  mutations of valid documents that the grammar accepts must parse with a
  strict JSON parser (no NaN/Infinity; numbers read both as exact decimals
  and as doubles, which must stay finite) and validate, both ways, against
  the schema with Debian's python3-jsonschema (Draft 2020-12, format
  checking on);
- completeness: random valid documents written in the canonical form
  (json.dumps, keys in "properties" order, ensure_ascii=False) with three
  whitespace styles (", "/": ", compact, indent=2) must be accepted.
Acceptance is decided by gbnf_ref.py, a reference GBNF reader; with
--engine, the C grammar engine (sd_grammar_accepts, through
sd-json_schema_check --docs) must decide every document the same way.

Usage: json_schema_fuzz.py [--engine] CONVERTER N_SCHEMAS [SEED]   (exit 1 on any failure)"""
import decimal
import json
import random
import subprocess
import sys
import os

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gbnf_ref  # noqa: E402
import jsonschema  # noqa: E402 (Debian's python3-jsonschema)
import pyrfc3339  # noqa: E402 (Debian's python3-rfc3339)

# Debian 12's jsonschema (4.10) checks date and uuid itself; its date-time and
# time checkers need rfc3339-validator, which Debian does not package, so they
# are registered here on pyRFC3339 (Debian's python3-rfc3339), which also
# checks the calendar.
FC = jsonschema.Draft202012Validator.FORMAT_CHECKER


@FC.checks("date-time", raises=ValueError)
def _dt(s):
    if not isinstance(s, str):
        return True
    pyrfc3339.parse(s, utc=False)
    return True


@FC.checks("time", raises=ValueError)
def _time(s):
    if not isinstance(s, str):
        return True
    pyrfc3339.parse("1970-01-01T" + s, utc=False)
    return True


assert {"date", "time", "date-time", "uuid"} <= set(FC.checkers), sorted(FC.checkers)


# JSON Schema's "integer" is any number with a zero fractional part; Python's
# jsonschema applies that to floats, and here to the exact (Decimal) reading too.
def _is_integer(checker, x):
    if isinstance(x, bool):
        return False
    if isinstance(x, int):
        return True
    if isinstance(x, float):
        return x.is_integer()
    return isinstance(x, decimal.Decimal) and x.is_finite() and x == x.to_integral_value()


Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer))
for fmt, bad in [("date", "2023-02-29"), ("date-time", "2023-01-01T25:00:00Z"), ("time", "12:61:00Z"),
                 ("uuid", "123")]:
    assert not FC.conforms(bad, fmt), "format checker for %s accepts %s" % (fmt, bad)

PATTERNS = ["^[a-z]+$", "^\\d{3}-\\d{4}$", "ab", "^(foo|bar)+$", "x$", "^[A-Z][a-z]*", "^[^\\s]{2,5}$",
            "^.{0,3}$", "^\\w+@\\w+\\.com$", "^(?:[0-9a-f]{2}){1,3}$", "^[\"\\\\]+$", "^a|b$",
            "^(ab|cd)*x?$", "[\\u00e9\\t]"]
FORMATS = ["date", "time", "date-time", "uuid"]
KEYS = ["name", "a", "b", "id", "tags", "x y", "q\"uote", "é", "n2"]


def rand_bounded(r, typ, p, lo_span, gap_min, gap_max):
    """An integer or number schema, each bound (inclusive or exclusive) present with probability p."""
    s = {"type": typ}
    if r.random() < p:
        s[r.choice(["minimum", "exclusiveMinimum"])] = r.randint(-lo_span, lo_span)
    if r.random() < p:
        lo = s.get("minimum", s.get("exclusiveMinimum", -lo_span))
        s[r.choice(["maximum", "exclusiveMaximum"])] = lo + r.randint(gap_min, gap_max)
    return s


def rand_schema(r, depth=0, defs=None):
    kinds = ["null", "boolean", "integer", "number", "string", "fmt", "pattern", "enum", "const"]
    if depth < 3:
        kinds += ["object", "object", "array", "array", "anyOf", "oneOf", "allOf", "types", "anyOfSib", "enumTyped"]
    if defs is not None and depth < 3:
        kinds += ["ref", "refSib"]
    k = r.choice(kinds)
    if k in ("null", "boolean"):
        return {"type": k}
    if k == "integer":
        return rand_bounded(r, k, 0.6, 1000, 2, 100000)
    if k == "number":
        return rand_bounded(r, k, 0.5, 50, 1, 200)
    if k == "string":
        s = {"type": "string"}
        if r.random() < 0.5:
            s["minLength"] = r.randint(0, 4)
        if r.random() < 0.5:
            s["maxLength"] = s.get("minLength", 0) + r.randint(0, 6)
        return s
    if k == "fmt":
        return {"type": "string", "format": r.choice(FORMATS)}
    if k == "pattern":
        return {"type": "string", "pattern": r.choice(PATTERNS)}
    if k == "enum":
        pool = ["red", "green", "", "a\"b", 1, 2.5, True, None, [1, "x"], {"k": 1}]
        return {"enum": r.sample(pool, r.randint(1, 4))}
    if k == "const":
        return {"const": r.choice(["fixed", 42, False, {"a": [1, 2]}, -0.5])}
    if k == "object":
        keys = r.sample(KEYS, r.randint(0, 4))
        s = {"type": "object", "properties": {key: rand_schema(r, depth + 1, defs) for key in keys}}
        req = [key for key in keys if r.random() < 0.5]
        if req:
            s["required"] = req
        a = r.random()
        if a < 0.3:
            s["additionalProperties"] = False
        elif a < 0.5:
            s["additionalProperties"] = rand_schema(r, depth + 2, defs)
        return s
    if k == "array":
        s = {"type": "array"}
        if r.random() < 0.3:
            s["prefixItems"] = [rand_schema(r, depth + 1, defs) for _ in range(r.randint(1, 3))]
            if r.random() < 0.5:
                s["items"] = False
        if "items" not in s and r.random() < 0.8:
            s["items"] = rand_schema(r, depth + 1, defs)
        if r.random() < 0.4:
            s["minItems"] = r.randint(0, 2)
        if r.random() < 0.4:
            s["maxItems"] = s.get("minItems", 0) + r.randint(0, 3)
        return s
    if k == "anyOf":
        return {"anyOf": [rand_schema(r, depth + 1, defs) for _ in range(r.randint(1, 3))]}
    if k == "oneOf":
        ts = r.sample(["null", "boolean", "string", "array", "object"], r.randint(1, 3))
        return {"oneOf": [{"type": t} for t in ts]}
    if k == "allOf":
        a, b = r.sample(KEYS, 2)
        return {"allOf": [{"type": "object", "properties": {a: rand_schema(r, depth + 1, defs)}, "required": [a]},
                          {"properties": {b: {"type": "integer", "minimum": 0}}}]}
    if k == "anyOfSib":  # siblings merged into each branch
        return {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "string"}},
                "anyOf": [{"required": ["a"]}, {"required": ["b"]}]}
    if k == "refSib":
        return {"$ref": "#/$defs/node", "required": ["next"]}
    if k == "enumTyped":
        return {"type": r.choice(["string", "integer", ["string", "null"]]), "enum": ["a", 1, None, 2.0, "b"]}
    if k == "types":
        return {"type": r.sample(["null", "boolean", "integer", "string"], 2), "minimum": 3, "maxLength": 4}
    if k == "ref":
        return {"$ref": "#/$defs/" + r.choice(list(defs))}
    raise AssertionError(k)


def rand_root(r):
    defs = {"node": {"type": "object", "properties": {"v": {"type": "integer"},
                                                       "next": {"$ref": "#/$defs/node"}},
                     "required": ["v"], "additionalProperties": False},
            "word": {"type": "string", "pattern": "^[a-z]{1,8}$"}}
    s = rand_schema(r, 0, defs)
    if r.random() < 0.3:
        s = {"type": "object", "properties": {"root": s, "list": {"$ref": "#/$defs/node"}}, "$defs": defs}
    elif isinstance(s, dict):
        s = dict(s)
        s["$defs"] = defs
    return s


# ---- valid documents from a schema ----

def gen_pattern(r, p):
    table = {"^[a-z]+$": lambda: "".join(r.choice("abcxyz") for _ in range(r.randint(1, 6))),
             "^\\d{3}-\\d{4}$": lambda: "%03d-%04d" % (r.randint(0, 999), r.randint(0, 9999)),
             "ab": lambda: r.choice(["", "z", "é"]) + "ab" + r.choice(["", "\n", "ab"]),
             "^(foo|bar)+$": lambda: "".join(r.choice(["foo", "bar"]) for _ in range(r.randint(1, 3))),
             "x$": lambda: r.choice(["", "\"", "yy"]) + "x",
             "^[A-Z][a-z]*": lambda: r.choice("QZ") + r.choice(["", "abc", "ab1 \t"]),
             # a negated class with a shorthand stays within ASCII (docs/JSON_SCHEMA.md)
             "^[^\\s]{2,5}$": lambda: "".join(r.choice("a#\"~") for _ in range(r.randint(2, 5))),
             "^.{0,3}$": lambda: "".join(r.choice("a\t\"\\é") for _ in range(r.randint(0, 3))),
             "^\\w+@\\w+\\.com$": lambda: "bob_1@ex.com",
             "^(?:[0-9a-f]{2}){1,3}$": lambda: "".join("%02x" % r.randint(0, 255) for _ in range(r.randint(1, 3))),
             "^[\"\\\\]+$": lambda: "".join(r.choice("\"\\") for _ in range(r.randint(1, 4))),
             "^[a-z]{1,8}$": lambda: "".join(r.choice("abq") for _ in range(r.randint(1, 8))),
             "^a|b$": lambda: r.choice(["a", "azz", "b", "zzb", "a\"b"]),
             "^(ab|cd)*x?$": lambda: "".join(r.choice(["ab", "cd"]) for _ in range(r.randint(0, 3))) + r.choice(["", "x"]),
             "[\\u00e9\\t]": lambda: r.choice(["", "q", "\n"]) + r.choice(["é", "\t"]) + r.choice(["", "z"])}
    return table[p]()


def gen_doc(r, s, root, depth=0):
    if s is True or s == {} or (isinstance(s, dict) and set(s) <= {"$defs"}):
        return r.choice([None, 1, "any", [True], {"k": 2.5}])
    if "$ref" in s:
        name = s["$ref"].split("/")[-1]
        doc = gen_doc(r, root["$defs"][name], root, depth + 1)
        for key in s.get("required", []):  # refSib: a required key the target has optional
            if key not in doc:
                doc[key] = gen_doc(r, root["$defs"][name]["properties"][key], root, depth + 1)
                doc = {k: doc[k] for k in root["$defs"][name]["properties"] if k in doc}
        return doc
    if "anyOf" in s and "type" in s:  # anyOfSib
        branch = r.choice(s["anyOf"])
        doc = gen_doc(r, {k: v for k, v in s.items() if k != "anyOf"}, root, depth + 1)
        for key in branch["required"]:
            doc[key] = gen_doc(r, s["properties"][key], root, depth + 1)
        order = list(s["properties"])
        return {k: doc[k] for k in order + [k for k in doc if k not in order] if k in doc}
    if "enum" in s and "type" in s:  # enumTyped: a value of the type
        t = s["type"] if isinstance(s["type"], list) else [s["type"]]
        ok = [v for v in s["enum"] if ("string" in t and isinstance(v, str)) or (v is None and "null" in t)
              or ("integer" in t and isinstance(v, (int, float)) and float(v).is_integer() and not isinstance(v, bool))]
        return r.choice(ok)
    if "const" in s:
        return s["const"]
    if "enum" in s:
        return r.choice(s["enum"])
    if "anyOf" in s or "oneOf" in s:
        return gen_doc(r, r.choice(s.get("anyOf") or s.get("oneOf")), root, depth + 1)
    if "allOf" in s:
        a, b = s["allOf"]
        doc = gen_doc(r, a, root, depth + 1)
        (bk, bs), = b["properties"].items()
        if bk in a["properties"] or not isinstance(doc, dict):
            return None  # the two branches may disagree on this key; skipped
        doc.pop(bk, None)
        if r.random() < 0.5:
            doc[bk] = r.randint(0, 99)
        # canonical order: the merged properties (a's, then b's), then the rest
        order = [k for k in list(a["properties"]) + [bk] if k in doc]
        return {k: doc[k] for k in order + [k for k in doc if k not in order]}
    t = s.get("type")
    if isinstance(t, list):
        t = r.choice(t)
    if t == "null":
        return None
    if t == "boolean":
        return r.random() < 0.5
    if t == "integer":
        lo = s.get("minimum", s.get("exclusiveMinimum", -10 ** 6) + 1 if "exclusiveMinimum" in s else -10 ** 6)
        hi = s.get("maximum", s.get("exclusiveMaximum", 10 ** 6) - 1 if "exclusiveMaximum" in s else 10 ** 6)
        if "exclusiveMinimum" in s:
            lo = s["exclusiveMinimum"] + 1
        if "exclusiveMaximum" in s:
            hi = s["exclusiveMaximum"] - 1
        lo = max(lo, 3) if s.get("minimum") == 3 and isinstance(s.get("type"), list) else lo
        return r.choice([lo, hi, r.randint(lo, hi)]) if lo <= hi else None
    if t == "number":
        lo = s.get("minimum", s.get("exclusiveMinimum", -100))
        hi = s.get("maximum", s.get("exclusiveMaximum", 100))
        x = round(r.uniform(lo, hi), r.randint(0, 3))
        if r.random() < 0.2:
            x = r.choice([lo, hi])
        return x
    if t == "string":
        if "format" in s:
            f = s["format"]
            y, m, d = r.randint(1, 9999), r.randint(1, 12), r.randint(1, 28)
            date = "%04d-%02d-%02d" % (y, m, d)
            tm = "%02d:%02d:%02d%s%s" % (r.randint(0, 23), r.randint(0, 59), r.randint(0, 59),
                                         r.choice(["", ".5", ".123456"]), r.choice(["Z", "+05:30", "-11:00"]))
            if f == "date":
                return r.choice([date, "2024-02-29", "2000-02-29"])
            if f == "time":
                return tm
            if f == "date-time":
                return date + "T" + tm
            return "%08x-%04x-%04x-%04x-%012x" % (r.getrandbits(32), r.getrandbits(16), r.getrandbits(16),
                                                 r.getrandbits(16), r.getrandbits(48))
        if "pattern" in s:
            return gen_pattern(r, s["pattern"])
        lo = s.get("minLength", 0)
        hi = s.get("maxLength", lo + 8)
        if isinstance(s.get("type"), list):
            hi = min(hi, 4)
        n = r.randint(lo, max(lo, hi))
        return "".join(r.choice(["a", "Z", " ", "é", "\"", "\\", "\n", "\u0001", "😀", "/"]) for _ in range(n))
    if t == "array":
        pre = s.get("prefixItems", [])
        lo = s.get("minItems", 0)
        hi = s.get("maxItems", max(lo, len(pre)) + 3)
        if s.get("items") is False:
            hi = min(hi, len(pre))
        n = r.randint(lo, max(lo, hi)) if depth < 6 else lo
        out = []
        for i in range(n):
            sub = pre[i] if i < len(pre) else s.get("items", True)
            out.append(gen_doc(r, sub, root, depth + 1))
        return out
    if t == "object":
        props = s.get("properties", {})
        req = s.get("required", [])
        out = {}
        for key, sub in props.items():
            if key in req or (r.random() < 0.5 and depth < 6):
                out[key] = gen_doc(r, sub, root, depth + 1)
        addl = s.get("additionalProperties", True)
        if addl is not False and r.random() < 0.4:
            for key in r.sample(["zz", "extra key", "é\"", "\u0007"], r.randint(1, 2)):
                if key not in props:
                    out[key] = gen_doc(r, addl, root, depth + 1) if addl is not True else r.choice([1, "s", None])
        return out
    return None


class Strict(Exception):
    pass


def strict_loads(text):
    """The document twice: numbers as exact decimals, and as doubles (which
    must stay finite), as the two ways validators read numbers."""
    def const(name):
        raise Strict("non-JSON constant " + name)

    def finite(t):
        v = float(t)
        if v in (float("inf"), float("-inf")):
            raise Strict("number overflows a double: " + t[:40])
        return v
    exact = json.loads(text, parse_constant=const, parse_float=decimal.Decimal)
    return exact, json.loads(text, parse_constant=const, parse_float=finite)


def valid(validator, doc):
    if isinstance(doc, Pair):
        return valid(validator, doc.exact) and valid(validator, doc.double)
    return not any(True for _ in validator.iter_errors(doc))


class Pair:
    def __init__(self, both):
        self.exact, self.double = both


def engine_check(conv, strict, schema_text, checked, fails):
    """Runs the C grammar engine over the documents; returns how many it
    decided as the reference reader did, and records each disagreement."""
    import tempfile
    with tempfile.NamedTemporaryFile("wb", delete=False) as f:
        f.write(b"\0".join(d.encode() for d, _ in checked))
        name = f.name
    try:
        p = subprocess.run([conv] + (["--strict"] if strict else []) + ["--docs", name, "-"],
                           input=schema_text.encode(), capture_output=True)
    finally:
        os.unlink(name)
    got = p.stdout.decode().split()
    if p.returncode != 0 or len(got) != len(checked):
        fails.append(("engine failed", schema_text, p.stderr.decode()[:300]))
        return 0
    agreed = 0
    for (doc, want), ans in zip(checked, got):
        if (ans == "accept") == want:
            agreed += 1
        else:
            fails.append(("engine disagrees with the reference reader", schema_text, doc, ans))
    return agreed


def main():
    args = [a for a in sys.argv[1:] if a != "--engine"]
    engine = "--engine" in sys.argv
    conv, n_schemas = args[0], int(args[1])
    seed = int(args[2]) if len(args) > 2 else 1
    r = random.Random(seed)
    stats = dict(schemas=0, refused=0, walks=0, mutants_accepted=0, complete=0, skipped_invalid_gen=0,
                 engine_agreed=0)
    fails = []
    for _ in range(n_schemas):
        schema = rand_root(r)
        text = json.dumps(schema)
        # strict applies its default to the merged schema of an allOf, which
        # the validator-side rewrite below cannot express: no strict there
        strict = r.random() < 0.3 and "allOf" not in text
        p = subprocess.run([conv] + (["--strict"] if strict else []) + ["-"], input=text.encode(),
                           capture_output=True)
        if p.returncode != 0:
            stats["refused"] += 1
            msg = p.stderr.decode().strip()
            if "allOf" not in msg and "oneOf" not in msg and "fits" not in msg:
                fails.append(("refused", text, msg))
            continue
        stats["schemas"] += 1
        g = gbnf_ref.Grammar(p.stdout.decode())
        vschema = json.loads(text)
        if strict:  # what strict means: objects without additionalProperties get false
            def close(x):
                if isinstance(x, dict):
                    if (x.get("type") == "object") and "additionalProperties" not in x:
                        x["additionalProperties"] = False
                    for v in x.values():
                        close(v)
                elif isinstance(x, list):
                    for v in x:
                        close(v)
            close(vschema)
        validator = Validator(vschema, format_checker=FC)
        checked = []  # (document, accepted by the reference reader): the engine must agree
        # soundness: random walks of the grammar
        for _ in range(4):
            doc_text = g.sample(r)
            stats["walks"] += 1
            checked.append((doc_text, True))
            try:
                doc = Pair(strict_loads(doc_text))
            except (ValueError, Strict) as e:
                fails.append(("walk does not parse", text, doc_text, str(e)))
                continue
            if not valid(validator, doc):
                fails.append(("walk invalid", text, doc_text))
        # completeness (and mutants for soundness)
        for _ in range(3):
            doc = gen_doc(r, schema, schema)
            if doc is None and not valid(validator, None):
                stats["skipped_invalid_gen"] += 1
                continue
            if not valid(validator, doc):
                stats["skipped_invalid_gen"] += 1
                continue
            for style in ({}, {"separators": (",", ":")}, {"indent": 2}):
                out = json.dumps(doc, ensure_ascii=False, **style)
                stats["complete"] += 1
                ok = g.accepts(out)
                checked.append((out, ok))
                if not ok:
                    fails.append(("valid canonical document refused", text, out))
            base = json.dumps(doc, ensure_ascii=False)
            for _ in range(3):
                m = list(base)
                i = r.randrange(len(m) + 1)
                op = r.random()
                ch = r.choice('0a"-,{}[]:.e5 \\')
                if op < 0.4 and i < len(m):
                    m[i] = ch
                elif op < 0.7:
                    m.insert(i, ch)
                elif i < len(m):
                    del m[i]
                mt = "".join(m)
                ok = g.accepts(mt)
                checked.append((mt, ok))
                if ok:
                    stats["mutants_accepted"] += 1
                    try:
                        md = Pair(strict_loads(mt))
                    except (ValueError, Strict) as e:
                        fails.append(("accepted mutant does not parse", text, mt, str(e)))
                        continue
                    if not valid(validator, md):
                        fails.append(("accepted mutant invalid", text, mt))
        if engine and checked:
            stats["engine_agreed"] += engine_check(conv, strict, text, checked, fails)
    pairs = stats["walks"] + stats["complete"] + stats["mutants_accepted"]
    if engine:
        print("json_schema_fuzz: the grammar engine (sd_grammar_accepts) agreed with the reference reader on %d documents"
              % stats["engine_agreed"])
    print("json_schema_fuzz: seed %d: %s; %d schema/document pairs checked; %d failures"
          % (seed, " ".join("%s=%d" % kv for kv in stats.items()), pairs, len(fails)))
    for f in fails[:10]:
        print("FAIL:", *[repr(x)[:400] for x in f], sep="\n  ")
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
