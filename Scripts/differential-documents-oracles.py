"""Differential check of BrazilianDocuments against independent CPF/CNPJ validators.

Called by Scripts/differential-documents, which installs the oracles, compiles the
Swift driver and passes the paths below. Generates seeded random inputs (valid and
invalid, numeric and alphanumeric, bare and formatted), runs our driver once per
document kind over all of them, then compares line by line against:

  stdnum    python-stdnum  stdnum.br.cpf / stdnum.br.cnpj   (raw input)
  docbr     validate-docbr validate_docbr.CPF / CNPJ         (raw input)
  brutils   brutils        brutils.cpf / brutils.cnpj        (bare input: brutils
            validates bare strings only, so it gets the input with separators and
            whitespace removed and letters uppercased, as its docs ask callers to do)
  spec      a from-spec implementation written here, from the issue's text, with
            our documented input policy; ours must match it on every input.

Every disagreement between ours and a third-party oracle must fall into a known,
explained class of that oracle's behaviour; anything else fails the run.
"""

import random
import subprocess
import sys
import time
from collections import Counter

from brutils import cnpj as brutils_cnpj
from brutils import cpf as brutils_cpf
from stdnum.br import cnpj as stdnum_cnpj
from stdnum.br import cpf as stdnum_cpf
from validate_docbr import CNPJ as DocbrCNPJ
from validate_docbr import CPF as DocbrCPF

DRIVER = sys.argv[1]
TOTAL = int(sys.argv[2])
SEED = int(sys.argv[3])

DIGITS = "0123456789"
ALNUM = DIGITS + "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
WHITESPACE = " \t\r\n"


# --- From-spec implementation (the rules, not our Swift code) -------------

def check_digit(values, weights):
    r = sum(v * w for v, w in zip(values, weights)) % 11
    return 0 if r < 2 else 11 - r


def spec_cpf(text):
    chars = [c for c in text if c not in ".-" and c not in WHITESPACE]
    if any(c not in DIGITS for c in chars) or len(chars) != 11:
        return False
    v = [int(c) for c in chars]
    if len(set(v)) == 1:
        return False
    return (v[9] == check_digit(v[:9], range(10, 1, -1))
            and v[10] == check_digit(v[:10], range(11, 1, -1)))


def spec_cnpj(text):
    chars = [c.upper() if "a" <= c <= "z" else c
             for c in text if c not in "./-" and c not in WHITESPACE]
    if len(chars) != 14 or any(c not in ALNUM for c in chars[:12]):
        return False
    if any(c not in DIGITS for c in chars[12:]):
        return False
    if len(set(chars)) == 1:
        return False
    v = [ord(c) - 48 for c in chars]
    return (v[12] == check_digit(v[:12], [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2])
            and v[13] == check_digit(v[:13], [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2]))


def make_cpf(rng):
    v = [rng.randrange(10) for _ in range(9)]
    v.append(check_digit(v, range(10, 1, -1)))
    v.append(check_digit(v, range(11, 1, -1)))
    return "".join(map(str, v))


def make_cnpj(rng, alphabet):
    c = [rng.choice(alphabet) for _ in range(12)]
    v = [ord(x) - 48 for x in c]
    d1 = check_digit(v, [5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2])
    d2 = check_digit(v + [d1], [6, 5, 4, 3, 2, 9, 8, 7, 6, 5, 4, 3, 2])
    return "".join(c) + str(d1) + str(d2)


def fmt_cpf(d):
    return f"{d[:3]}.{d[3:6]}.{d[6:9]}-{d[9:]}"


def fmt_cnpj(d):
    return f"{d[:2]}.{d[2:5]}.{d[5:8]}/{d[8:12]}-{d[12:]}"


def change(rng, s, i, alphabet):
    return s[:i] + rng.choice([c for c in alphabet if c != s[i]]) + s[i + 1:]


# --- Input generation ----------------------------------------------------------

def cpf_inputs(rng, n):
    kinds = [
        ("valid bare", 20, lambda: make_cpf(rng)),
        ("valid formatted", 8, lambda: fmt_cpf(make_cpf(rng))),
        ("valid with spaces", 4, lambda: " " * rng.randrange(1, 3) + rng.choice(
            [make_cpf(rng), fmt_cpf(make_cpf(rng))]) + " " * rng.randrange(0, 3)),
        ("check digit changed", 14, lambda: (lambda d: change(
            rng, d, rng.choice([9, 10]), DIGITS))(make_cpf(rng))),
        ("other digit changed", 14, lambda: (lambda d: change(
            rng, d, rng.randrange(9), DIGITS))(make_cpf(rng))),
        ("adjacent digits swapped", 6, lambda: (lambda d, i: d[:i] + d[i + 1] + d[i]
                                                + d[i + 2:])(make_cpf(rng), rng.randrange(10))),
        ("random 11 digits", 20, lambda: "".join(rng.choice(DIGITS) for _ in range(11))),
        ("repeated digit", 1, lambda: rng.choice(DIGITS) * 11),
        ("wrong length", 5, lambda: "".join(
            rng.choice(DIGITS) for _ in range(rng.choice([0, 1, 9, 10, 12, 13])))),
        ("junk characters", 8, lambda: "".join(
            rng.choice("0123456789.-/ aX,") for _ in range(rng.randrange(8, 17)))),
    ]
    return generate(rng, n, kinds)


def cnpj_inputs(rng, n):
    def lower(s):
        return s.lower() if rng.random() < 0.5 else "".join(
            c.lower() if rng.random() < 0.5 else c for c in s)

    kinds = [
        ("valid numeric bare", 10, lambda: make_cnpj(rng, DIGITS)),
        ("valid alphanumeric bare", 12, lambda: make_cnpj(rng, ALNUM)),
        ("valid formatted", 8, lambda: fmt_cnpj(make_cnpj(rng, rng.choice([DIGITS, ALNUM])))),
        ("valid lowercase", 4, lambda: lower(rng.choice(
            [make_cnpj(rng, ALNUM), fmt_cnpj(make_cnpj(rng, ALNUM))]))),
        ("valid with spaces", 3, lambda: " " + fmt_cnpj(make_cnpj(rng, ALNUM)) + " "),
        ("check digit changed", 12, lambda: (lambda d: change(
            rng, d, rng.choice([12, 13]), DIGITS))(make_cnpj(rng, rng.choice([DIGITS, ALNUM])))),
        ("other character changed", 12, lambda: (lambda d: change(
            rng, d, rng.randrange(12), ALNUM))(make_cnpj(rng, rng.choice([DIGITS, ALNUM])))),
        ("letter in a check-digit place", 3, lambda: (lambda d: change(
            rng, d, rng.choice([12, 13]), ALNUM[10:]))(make_cnpj(rng, ALNUM))),
        ("random 14 numeric", 8, lambda: "".join(rng.choice(DIGITS) for _ in range(14))),
        ("random 12 alphanumeric + 2 digits", 12, lambda: "".join(
            rng.choice(ALNUM) for _ in range(12)) + "".join(rng.choice(DIGITS) for _ in range(2))),
        ("repeated character", 1, lambda: rng.choice(ALNUM) * 14),
        ("wrong length", 5, lambda: "".join(
            rng.choice(ALNUM) for _ in range(rng.choice([0, 1, 12, 13, 15, 16])))),
        ("junk characters", 6, lambda: "".join(
            rng.choice("0123456789AZaz./- _,") for _ in range(rng.randrange(10, 21)))),
    ]
    return generate(rng, n, kinds)


def generate(rng, n, kinds):
    weights = [w for _, w, _ in kinds]
    picks = rng.choices(range(len(kinds)), weights=weights, k=n)
    return [(kinds[k][0], kinds[k][2]()) for k in picks]


# --- Oracles -------------------------------------------------------------------

def bare(text, separators, upper):
    s = "".join(c for c in text if c not in separators and c not in WHITESPACE)
    return s.upper() if upper else s


docbr_cpf = DocbrCPF()
docbr_cnpj = DocbrCNPJ()

ORACLES = {
    "cpf": {
        "stdnum": stdnum_cpf.is_valid,
        "docbr": docbr_cpf.validate,
        "brutils": lambda t: brutils_cpf.is_valid(bare(t, ".-", False)),
        "spec": spec_cpf,
    },
    "cnpj": {
        "stdnum": stdnum_cnpj.is_valid,
        "docbr": docbr_cnpj.validate,
        "brutils": lambda t: brutils_cnpj.is_valid(bare(t, "./-", True)),
        "spec": spec_cnpj,
    },
}


def explain(kind, oracle, text, ours, theirs):
    """The known reason for a disagreement, or None if it is unexplained."""
    significant = [c for c in text if c not in ".-/" and c not in WHITESPACE]
    repeated = len(significant) > 0 and len(set(significant)) == 1
    if kind == "cpf" and oracle == "stdnum" and theirs and repeated:
        return "stdnum accepts repeated-digit CPFs (all but 000.000.000-00)"
    if oracle == "docbr" and not theirs and ours and any(c in WHITESPACE for c in text):
        return "validate-docbr refuses any space, even surrounding ones"
    if (kind == "cpf" and oracle == "docbr" and theirs and not ours
            and all(c in DIGITS + ".-" for c in text) and len(significant) < 11):
        return "validate-docbr pads a CPF shorter than 11 digits with leading zeros"
    return None


def main():
    rng = random.Random(SEED)
    n_cpf = TOTAL // 2
    failures = 0
    print(f"oracles: python-stdnum, validate-docbr, brutils (+ from-spec reference); "
          f"seed {SEED}")
    probe = "12ABC34501DE35"
    for name, fn in ORACLES["cnpj"].items():
        print(f"  alphanumeric CNPJ support, {name}: "
              f"{'yes' if fn(probe) else 'NO'} ({probe} -> {fn(probe)})")
        if not fn(probe):
            print(f"  {name} cannot validate alphanumeric CNPJs: this version is too old")
            failures += 1
    for kind, n in (("cpf", n_cpf), ("cnpj", TOTAL - n_cpf)):
        started = time.time()
        inputs = cpf_inputs(rng, n) if kind == "cpf" else cnpj_inputs(rng, n)
        payload = "".join(text + "\n" for _, text in inputs).encode()
        result = subprocess.run([DRIVER, kind], input=payload, capture_output=True, check=True)
        ours = [line == b"1" for line in result.stdout.split(b"\n")[:-1]]
        if len(ours) != len(inputs):
            print(f"driver answered {len(ours)} lines for {len(inputs)} inputs")
            return 1
        swift_seconds = time.time() - started
        print(f"\n== {kind.upper()}: {n} inputs ({sum(ours)} valid by ours; "
              f"generation + Swift driver {swift_seconds:.1f}s)")
        by_category = Counter(c for c, _ in inputs)
        valid_by_category = Counter(c for (c, _), o in zip(inputs, ours) if o)
        for category, count in sorted(by_category.items()):
            print(f"   {category:36} {count:8}  valid by ours {valid_by_category[category]:8}")
        unexplained_examples = []
        consensus_split = 0
        answers = {}
        for name, fn in ORACLES[kind].items():
            answers[name] = [bool(fn(text)) for _, text in inputs]
        for name in ORACLES[kind]:
            agree = 0
            explained = Counter()
            unexplained = 0
            for (category, text), o, t in zip(inputs, ours, answers[name]):
                if o == t:
                    agree += 1
                    continue
                reason = None if name == "spec" else explain(kind, name, text, o, t)
                if reason:
                    explained[reason] += 1
                else:
                    unexplained += 1
                    if len(unexplained_examples) < 10:
                        unexplained_examples.append((name, category, text, o, t))
            failures += unexplained
            print(f"   vs {name:8} checked {n:8}  agree {agree:8}  "
                  f"disagree {n - agree:7}  unexplained {unexplained}")
            for reason, count in explained.most_common():
                print(f"        explained {count:7}: {reason}")
        third_party = ("stdnum", "docbr", "brutils")
        for i in range(n):
            votes = {answers[name][i] for name in third_party}
            if len(votes) > 1:
                consensus_split += 1
        unanimous_against = sum(
            1 for i in range(n)
            if all(answers[name][i] != ours[i] for name in third_party))
        print(f"   oracles split among themselves on {consensus_split} inputs; "
              f"all three against ours on {unanimous_against}")
        for example in unexplained_examples:
            print(f"   UNEXPLAINED {example[0]} [{example[1]}] {example[2]!r}: "
                  f"ours={int(example[3])} theirs={int(example[4])}")
    print(f"\nresult: {'FAIL' if failures else 'OK'} ({failures} unexplained disagreements)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
