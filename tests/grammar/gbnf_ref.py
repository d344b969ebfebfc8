"""A small reference reader for the GBNF the JSON Schema converter writes:
parses it into plain BNF over code points, recognizes strings with a
pushdown walk (the set of rule stacks after each character), and draws random
strings from it. Written for the tests, independent of the C grammar engine;
it reads the subset of llama.cpp's GBNF dialect that the converter emits:
rules, string literals, character classes (negated too), groups, alternation,
and the repetitions * + ? {m} {m,} {m,n}."""
import random
import sys

sys.setrecursionlimit(100000)


class Grammar:
    def __init__(self, text):
        self.rules = {}  # name -> list of alternatives; alternative: list of symbols
        self.n_fresh = 0
        self._parse(text)

    # ---- parsing ----
    def _fresh(self, alts):
        self.n_fresh += 1
        name = " g%d" % self.n_fresh
        self.rules[name] = alts
        return ("n", name)

    def _parse(self, text):
        self.s, self.i = text, 0
        while True:
            self._ws(True)
            if self.i >= len(self.s):
                break
            name = self._name()
            self._ws(False)
            assert self.s.startswith("::=", self.i), "expected ::= at %d" % self.i
            self.i += 3
            self.rules[name] = self._alts(top=True)
        self.rules = {n: [tuple(a) for a in alts] for n, alts in self.rules.items()}

    def _ws(self, newlines):
        while self.i < len(self.s) and (self.s[self.i] in " \t" or (newlines and self.s[self.i] == "\n")):
            self.i += 1

    def _name(self):
        j = self.i
        while self.i < len(self.s) and (self.s[self.i].isalnum() or self.s[self.i] == "-"):
            self.i += 1
        assert self.i > j, "expected a name at %d: %r" % (j, self.s[j:j + 20])
        return self.s[j:self.i]

    def _alts(self, top):
        alts = [self._seq(top)]
        while self.i < len(self.s) and self.s[self.i] == "|":
            self.i += 1
            alts.append(self._seq(top))
        return alts

    def _esc(self):
        c = self.s[self.i]
        self.i += 1
        if c == "x":
            v = int(self.s[self.i:self.i + 2], 16); self.i += 2; return chr(v)
        if c == "u":
            v = int(self.s[self.i:self.i + 4], 16); self.i += 4; return chr(v)
        if c == "U":
            v = int(self.s[self.i:self.i + 8], 16); self.i += 8; return chr(v)
        return {"n": "\n", "r": "\r", "t": "\t"}.get(c, c)

    def _seq(self, top):
        seq = []
        while True:
            self._ws(False)
            if self.i >= len(self.s):
                return seq
            c = self.s[self.i]
            if c in "|)" or c == "\n":
                return seq
            if c == '"':
                self.i += 1
                chars = []
                while self.s[self.i] != '"':
                    if self.s[self.i] == "\\":
                        self.i += 1
                        chars.append(self._esc())
                    else:
                        chars.append(self.s[self.i]); self.i += 1
                self.i += 1
                atom = [("c", (False, ((ch, ch),))) for ch in chars]
            elif c == "[":
                self.i += 1
                neg = self.s[self.i] == "^"
                if neg:
                    self.i += 1
                ranges = []
                while self.s[self.i] != "]":
                    if self.s[self.i] == "\\":
                        self.i += 1; lo = self._esc()
                    else:
                        lo = self.s[self.i]; self.i += 1
                    hi = lo
                    if self.s[self.i] == "-" and self.s[self.i + 1] != "]":
                        self.i += 1
                        if self.s[self.i] == "\\":
                            self.i += 1; hi = self._esc()
                        else:
                            hi = self.s[self.i]; self.i += 1
                    ranges.append((lo, hi))
                self.i += 1
                atom = [("c", (neg, tuple(ranges)))]
            elif c == "(":
                self.i += 1
                alts = self._alts(False)
                self._ws(True)
                assert self.s[self.i] == ")", "expected ) at %d" % self.i
                self.i += 1
                atom = [self._fresh(alts)]
            else:
                atom = [("n", self._name())]
            # a repetition applies to the last atom (a literal counts as one)
            if self.i < len(self.s) and self.s[self.i] in "*+?{":
                unit = atom if len(atom) == 1 else [self._fresh([atom])]
                q = self.s[self.i]; self.i += 1
                if q == "{":
                    j = self.s.index("}", self.i)
                    body = self.s[self.i:j]; self.i = j + 1
                    if "," in body:
                        a, b = body.split(",")
                        lo, hi = int(a), (int(b) if b.strip() else None)
                    else:
                        lo = hi = int(body)
                else:
                    lo, hi = {"*": (0, None), "+": (1, None), "?": (0, 1)}[q]
                seq.extend(self._repeat(unit, lo, hi))
            else:
                seq.extend(atom)

    def _repeat(self, unit, lo, hi):
        out = unit * lo
        if hi is None:
            star = self._fresh([])
            self.rules[star[1]] = [unit + [star], []]
            return out + [star]
        opt = None  # nested optionals: (u (u ...)?)?
        for _ in range(hi - lo):
            opt = self._fresh([unit + ([opt] if opt else []), []])
        return out + ([opt] if opt else [])

    # ---- recognizing ----
    @staticmethod
    def _match(cls, ch):
        neg, ranges = cls
        inside = any(lo <= ch <= hi for lo, hi in ranges)
        return inside != neg

    def _expand(self, stack, out, seen):
        """Stack: a linked tuple (alt, pos, parent). Adds the stacks whose top
        is a character class, or the empty stack (None) when the input may end."""
        while True:
            if stack is None:
                out.add(None)
                return
            alt, pos, parent = stack
            if pos == len(alt):
                stack = parent
                continue
            sym = alt[pos]
            if sym[0] == "c":
                out.add(stack)
                return
            key = (id(alt), pos, parent)
            if key in seen:
                return
            seen.add(key)
            for a in self.rules[sym[1]]:
                self._expand((a, 0, (alt, pos + 1, parent)), out, seen)
            return

    def accepts(self, text, root="root"):
        cur = set()
        seen = set()
        for a in self.rules[root]:
            self._expand((a, 0, None), cur, seen)
        for ch in text:
            nxt = set()
            seen = set()
            for st in cur:
                if st is None:
                    continue
                alt, pos, parent = st
                if self._match(alt[pos][1], ch):
                    self._expand((alt, pos + 1, parent), nxt, seen)
            if not nxt:
                return False
            cur = nxt
        return None in cur

    # ---- random strings ----
    def _min_len(self):
        INF = float("inf")
        ml = {n: INF for n in self.rules}
        def alt_len(a):
            return sum(1 if s[0] == "c" else ml[s[1]] for s in a)
        changed = True
        while changed:
            changed = False
            for n, alts in self.rules.items():
                v = min((alt_len(a) for a in alts), default=INF)
                if v < ml[n]:
                    ml[n] = v; changed = True
        self.ml = ml
        return ml

    def _pick_char(self, cls, rnd):
        neg, ranges = cls
        if not neg:
            lo, hi = rnd.choice(ranges)
            return chr(rnd.randint(ord(lo), ord(hi)))
        pool = [chr(c) for c in list(range(0x20, 0x7F)) + [0xE9, 0x4E2D, 0x1F600, 0x2028, 0x7F, 0x0A]]
        rnd.shuffle(pool)
        for ch in pool:
            if self._match(cls, ch):
                return ch
        raise ValueError("no character")

    def sample(self, rnd, root="root", budget=400):
        if not hasattr(self, "ml"):
            self._min_len()
        out = []
        stack = [("n", root)]
        steps = 0
        while stack:
            sym = stack.pop()
            if sym[0] == "c":
                out.append(self._pick_char(sym[1], rnd))
                continue
            alts = self.rules[sym[1]]
            steps += 1
            if steps > budget or len(out) > budget:  # wind down: shortest alternatives
                best = min(sum(1 if s[0] == "c" else self.ml[s[1]] for s in a) for a in alts)
                alts = [a for a in alts if sum(1 if s[0] == "c" else self.ml[s[1]] for s in a) == best]
            else:
                alts = [a for a in alts if all(s[0] == "c" or self.ml[s[1]] < float("inf") for s in a)]
            a = rnd.choice(alts)
            stack.extend(reversed(a))
        return "".join(out)
