"""Summarize a run of onnx's node tests against kiln (scripts/onnx-suite.sh; the results file of
scripts/onnx/suite_plugin.py).

Prints the passed/failed/skipped counts and the pass rate over the node tests; with --report FILE
also writes a Markdown report: the counts and every failing test with its one-line reason, grouped
by reason (an operator kiln lacks, listed per operator; an opset newer than kiln's; a dtype or an
attribute kiln refuses; a wrong value, dtype or shape; a crash ...), so the gaps are easy to assign.
With --debian DIR, also the pass rate over the tests that Debian's libonnx-testdata (the suite
ctest grades, tests/onnx) has too."""
import argparse
import collections
import os
import re
import sys


def read(path: str) -> dict:
    last = {}  # test -> (outcome, reason): the last line of a test wins
    for line in open(path):
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 2:
            last[parts[0]] = (parts[1], parts[2] if len(parts) > 2 else "")
    for name, (outcome, _) in last.items():
        if outcome == "started":  # the run ended inside it (the script records these; a safety net)
            last[name] = ("failed", "crash: the run ended while this test ran")
    return last


def missing_op(reason: str):
    m = re.search(r"operator (\S+) is not supported by kiln", reason)
    return m.group(1) if m else None


def newer_opset(reason: str):
    m = re.search(r"imports opset (\d+); kiln supports opsets", reason)
    return int(m.group(1)) if m else None


def group_of(reason: str) -> str:
    if missing_op(reason):
        return "operator not implemented"
    if newer_opset(reason):
        return "opset newer than kiln supports"
    if re.search(r"operators of domain '[^']*' are not supported|imports no opset of the default ONNX domain", reason):
        return "operators of another domain (ai.onnx.ml, training, ...)"
    if re.search(r"has element type .*, which kiln does not support|dtype kiln (does not|lacks)|have no numpy dtype|not supported.*dtype|dtype.*not supported", reason):
        return "dtype not supported"
    if re.search(r"attribute '[^']*' is not supported|subgraph attribute", reason):
        return "attribute not supported (at load)"
    if re.search(r"is not a tensor \(sequences|sequence|optional", reason, re.I) and "kiln" in reason:
        return "sequences / optionals not supported"
    if reason.startswith("crash"):
        return "crash or hang (the process died)"
    if "PEER_TEST_TIMEOUT" in reason:
        return "timeout"
    if "has incorrect shape" in reason:
        return "wrong output shape"
    if "Not equal to tolerance" in reason or "Mismatched elements" in reason or "Arrays are not equal" in reason:
        return "wrong values"
    if re.match(r"AssertionError:\s*Items are not equal", reason):
        return "wrong output dtype" if "dtype(" in reason else "wrong number of outputs"
    if re.match(r"kiln\.\w*Error\b", reason):
        return "other kiln.Error (at load or run: an unsupported case refused, or a bug)"
    m = re.match(r"(\w+(?:\.\w+)*):", reason)
    return f"other: {m.group(1)}" if m else "other"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--report")
    ap.add_argument("--title", default="onnx's node tests (onnx.backend.test) against kiln")
    ap.add_argument("--note", default="")
    ap.add_argument("--debian", help="Debian's libonnx-testdata node directory, for the pass rate over its tests")
    a = ap.parse_args()

    results = read(a.results)
    passed = sorted(n for n, (o, _) in results.items() if o == "passed")
    failed = sorted((n, r) for n, (o, r) in results.items() if o == "failed")
    skipped = sorted((n, r) for n, (o, r) in results.items() if o == "skipped")
    total = len(results)
    rate = 100.0 * len(passed) / total if total else 0.0
    lines = [f"onnx-suite: {len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped (of {total} node tests): "
             f"pass rate {rate:.1f}%"]
    if a.debian and os.path.isdir(a.debian):
        deb = set(os.listdir(a.debian)) & set(results)
        deb_passed = sum(1 for n in deb if results[n][0] == "passed")
        lines.append(f"onnx-suite: of the {len(deb)} that Debian's libonnx-testdata has too: {deb_passed} passed "
                     f"({100.0 * deb_passed / len(deb) if deb else 0:.1f}%)")
    print("\n".join(lines))

    if a.report:
        groups = collections.defaultdict(list)
        for name, reason in failed:
            groups[group_of(reason)].append((name, reason))
        out = [f"# {a.title}", ""]
        if a.note:
            out += [a.note, ""]
        out += [f"**{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped** (of {total}): "
                f"**{rate:.1f}%** pass.", ""]
        out += [line.replace("onnx-suite: ", "") + "." for line in lines[1:]] + ([""] if lines[1:] else [])
        out += ["| reason | tests |", "|---|---|"]
        out += [f"| {g} | {len(groups[g])} |" for g in sorted(groups, key=lambda g: (-len(groups[g]), g))]
        out.append("")
        for g in sorted(groups, key=lambda g: (-len(groups[g]), g)):
            out += [f"## {g} ({len(groups[g])})", ""]
            if g == "operator not implemented":
                by_op = collections.defaultdict(list)
                for n, r in groups[g]:
                    by_op[missing_op(r)].append(n)
                for op in sorted(by_op, key=lambda o: (-len(by_op[o]), o)):
                    out.append(f"- **{op}** ({len(by_op[op])}): " + ", ".join(f"`{n}`" for n in by_op[op]))
            elif g == "opset newer than kiln supports":
                by_opset = collections.defaultdict(list)
                for n, r in groups[g]:
                    by_opset[newer_opset(r)].append(n)
                for v in sorted(by_opset):
                    out.append(f"- **opset {v}** ({len(by_opset[v])}): " + ", ".join(f"`{n}`" for n in by_opset[v]))
            else:
                for n, r in sorted(groups[g], key=lambda nr: (nr[1], nr[0])):
                    out.append(f"- `{n}`: {r.replace(chr(96), chr(39))}")
            out.append("")
        if skipped:
            out += [f"## skipped ({len(skipped)})", ""]
            out += [f"- `{n}`: {r}" for n, r in skipped]
            out.append("")
        with open(a.report, "w") as f:
            f.write("\n".join(out))
        print(f"onnx-suite: report written to {a.report}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
