#!/usr/bin/python3
"""Random Jinja expressions and statements over a fixed context, rendered by
Python's jinja2 in transformers' environment (as render_jinja.py), for
tests/chat/test_jinja_golden.c to compare the interpreter against: byte-equal
output where jinja2 renders, an error where jinja2 raises.

Left out (printed as "skipped"): templates jinja2 rejects as syntax errors
(the interpreter's parser accepts a superset: `x is odd if c`), a test
followed by `not` or `in` (jinja2 takes the word as the test's argument), and results
that are lazy Python objects (jinja2 prints '<generator object ...>' for
`unique` or `items` not consumed, list_reverseiterator for `reverse` of a
list) which no template relies on.
usage: jinja_random.py SEED COUNT"""
import copy
import json
import random
import sys

import jinja2
import jinja2.ext
from jinja2.sandbox import ImmutableSandboxedEnvironment

seed, count = int(sys.argv[1]), int(sys.argv[2])
R = random.Random(seed)


class TemplateError(Exception):
    pass


def raise_exception(message):
    raise TemplateError(message)


def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)


env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[jinja2.ext.loopcontrols])
env.filters["tojson"] = tojson
env.globals["raise_exception"] = raise_exception

CONTEXT = {"xs": [3, 1, 2, 1], "ws": ["b", "A", "a", "c b"], "s": " Hello, World é ", "n": 7, "f": 2.5,
           "d": {"b": 1, "a": [1, 2], "c": "x"},
           "msgs": [{"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "yo",
                     "tool_calls": [{"function": {"name": "f", "arguments": {"x": 1}}}]},
                    {"role": "user", "content": " bye "}],
           "e": "", "z": None, "t": True}
FILTERS = ["length", "trim", "upper", "lower", "join(',')", "first", "last", "default('z')", "string", "list",
           "tojson", "dictsort", "unique|list", "int", "title", "capitalize", "replace('a','b')",
           "selectattr('role','equalto','user')|list", "map(attribute='role')|list", "tojson(indent=2)", "sort",
           "min", "max", "sum", "select('odd')|list", "reject('none')|list", "rejectattr('content')|list", "d",
           "float", "abs", "count", "wordcount", "string|indent(2)", "tojson(sort_keys=True)",
           "tojson(ensure_ascii=True)", "tojson(separators=(',', ':'))", "tojson(indent=1, sort_keys=True)"]
TESTS = ["defined", "undefined", "none", "string", "mapping", "iterable", "sequence", "number", "odd", "even",
         "integer", "float", "boolean", "true", "false", "equalto 3", "divisibleby 2", "in [1, 'ab']", "lower",
         "upper"]
METHODS = ["s.split()", "s.strip()", "s.startswith(' H')", "d.get('a')", "d.get('q', 5)", "d.items()|list",
           "s.split(',')", "s.rstrip()", "ws[0].upper()", "s.lstrip().lower()", "s.replace('l','L')",
           "'{}-{}'.format(n, s)", "s.endswith(' ')", "d.keys()|list", "d|items|list", "s.find('o')", "s.title()",
           "'%s=%d' % ('a', n)", "s.split(' ', 1)", "s.rsplit(',', 1)", "'a-b-c'.split('-')[::-1]",
           "d.values()|list", "(s|trim).capitalize()", "s.count('l')"]


def atom(d):
    c = R.randrange(12)
    if c == 0:
        return str(R.randrange(-3, 11))
    if c == 1:
        return R.choice(["0.5", "2.0", "1.25", "-3.5", "10.0", "1e3"])
    if c == 2:
        return R.choice(["'ab'", "'A b'", "''", "' x '", "'é!'", "\"q'\"", "'a,b,,c'", "'<t>'", "'tab\\there'"])
    if c == 3:
        return R.choice(["none", "true", "false", "True"])
    if c == 4:
        return R.choice(["xs", "ws", "s", "n", "f", "d", "msgs", "e", "z", "t", "undefined_v", "msgs[0]",
                         "msgs[1].tool_calls", "d.a", "d['c']", "msgs[1].tool_calls[0].function.arguments"])
    if c == 5 and d < 3:
        return "[" + ", ".join(expr(d + 1) for _ in range(R.randrange(4))) + "]"
    if c == 6 and d < 3:
        return "{" + ", ".join(R.choice(["'k'", "'a'", "'b'"]) + ": " + expr(d + 1)
                               for _ in range(R.randrange(3))) + "}"
    if c == 7 and d < 3:
        return "(" + expr(d + 1) + ")"
    if c == 8:
        return R.choice(["xs[1:]", "s[::-1]", "xs[-1]", "ws[1:3]", "s[2:5]", "xs[::2]", "msgs[-1].content",
                         "s[-3:]", "xs[5]", "xs[::-1]", "s[:-1]"])
    if c == 9 and d < 3:
        return R.choice(METHODS)
    return R.choice(["n", "s", "xs"])


def expr(d=0):
    if d > 3:
        return atom(d)
    c = R.randrange(10)
    if c < 3:
        return atom(d)
    if c == 3:
        op = R.choice(["+", "-", "*", "//", "%", "~", "~", "==", "!=", "<", ">", "<=", "in", "not in", "and", "or",
                       "/"])
        return expr(d + 1) + " " + op + " " + expr(d + 1)
    if c == 4:
        return "(" + expr(d + 1) + ")|" + R.choice(FILTERS)
    if c == 5:
        return "(" + expr(d + 1) + ") is " + R.choice(["", "not "]) + R.choice(TESTS)
    if c == 6:
        return "(not " + expr(d + 1) + ")"
    if c == 7:
        return "(" + expr(d + 1) + " if " + expr(d + 1) + " else " + expr(d + 1) + ")"
    if c == 8:
        return "-" + atom(d)
    return atom(d) + "|" + R.choice(FILTERS)


def ws():
    return R.choice(["", " ", "\n", "  \n", "\n  ", "\n\n", "\t", " \n \n"])


def tag(body, kind="%"):
    left = R.choice(["", "", "-", "+"]) if kind == "%" else R.choice(["", "-"])
    right = R.choice(["", "", "-"])
    return "{" + kind + left + " " + body + " " + right + kind + "}" if kind == "%" else \
        "{{" + left + " " + body + " " + right + "}}"


def layout():
    """Tags with random whitespace control and indentation: the lexer's trim_blocks / lstrip_blocks rules."""
    parts = [ws(), tag("for x in xs"), ws(), tag("if loop.first", "%"), ws(), "a", ws(), tag("elif x > 1"),
             ws(), tag("x", "{"), ws(), tag("else"), ws(), "{# c #}", ws(), tag("endif"), ws(), tag("endfor"), ws(),
             tag("set y = 1"), ws(), R.choice(["{% raw %}" + ws() + "{{ y }}" + ws() + "{% endraw %}", "r"]), ws()]
    return "".join(parts)


def macro():
    return ("{% macro m(a, b=2, c='k') %}<{{ a }}|{{ b }}|{{ c ~ caller_v|default('') }}>{% endmacro %}"
            "{{ m(" + expr() + ") }}{{ m(1, c=" + expr() + ") }}{{ m(b=" + expr() + ", a=0) }}"
            "{% set blk %}[{{ " + expr() + " }}]{% endset %}{{ blk|length }}{{ blk }}"
            "{% for a in [1, 2] %}{% for b in ws[:2] %}{{ loop.index }}{{ loop.depth }}.{% endfor %}{% endfor %}")


def statement():
    c = R.randrange(8)
    if c == 6:
        return layout()
    if c == 7:
        return macro()
    if c == 0:
        return "{{ " + expr() + " }}"
    if c == 1:
        it = R.choice(["xs", "ws", "msgs", "s", "d", "[]", "xs[1:]", "d.items()"])
        return ("{% for x in " + it + " %}{{ loop.index }}{{ x }}{{ " + expr() + " }}"
                "{% if loop.last %}!{% endif %}{% else %}E{% endfor %}")
    if c == 2:
        return "{% if " + expr() + " %}A{{ " + expr() + " }}{% elif " + expr() + " %}B{% else %}C{% endif %}"
    if c == 3:
        return "{% set v = " + expr() + " %}[{{ v }}]{{ v|tojson }}"
    if c == 4:
        return ("{%- set ns = namespace(k=0) %}{% for x in " + R.choice(["xs", "ws", "msgs"]) + " %}"
                "{%- if " + expr() + " %}{% set ns.k = ns.k + 1 %}{% continue %}{% endif %}"
                "{{ loop.revindex }}{{ loop.previtem }}{{ loop.nextitem }}{% endfor %}{{ ns.k }}")
    return "{{ " + expr() + " }}|{{ " + expr() + " }}"


def main():
    cases, skipped = [], 0
    while len(cases) < count:
        text = "\n".join(statement() for _ in range(R.randrange(1, 3)))
        case = {"template": "random", "text": text, "conversation": "seed %d" % seed, "context": CONTEXT}
        try:
            # a copy each time: jinja2's indent filter does `s += "\n"`, which extends a list in place
            case["expected"] = env.from_string(text).render(**copy.deepcopy(CONTEXT))
            lazy = any(w in case["expected"] for w in ("<generator", "iterator object", "<dict_"))
        except jinja2.exceptions.TemplateSyntaxError:
            lazy = True
        except Exception as e:  # noqa: BLE001 (any jinja2 failure: the interpreter must fail too)
            case["error"] = type(e).__name__ + ": " + str(e)
            # "takes 1 positional argument": jinja2 took a following `not` as a test's argument
            # and "'in' is undefined": jinja2 took a following `in` / `not` as a test's argument, a variable
            lazy = any(w in str(e) for w in ("generator", "iterator", "unhashable", "positional argument",
                                             "'in' is undefined", "'not' is undefined", "'if' is undefined"))
        if lazy:
            skipped += 1
            continue
        cases.append(case)
    print("jinja_random: seed %d, %d cases, %d skipped" % (seed, len(cases), skipped), file=sys.stderr)
    json.dump({"now": 0, "cases": cases}, sys.stdout, ensure_ascii=False)


main()
