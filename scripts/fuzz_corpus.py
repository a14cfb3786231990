#!/usr/bin/env python3
"""Seed corpus of the MSL front-end fuzzer, from every kernel the repository
tests: the string literals of examples/ and tests/python (Python, read with
ast), the string literals of tests/msl (C++), and every .metal file. Each
kernel is written in the fuzzer's input format (tests/fuzz/msl_fuzz_input.h):
an options line, the source, then optional `//@header` section.

    python3 scripts/fuzz_corpus.py OUT_DIR

The corpus is made at run time (scripts/fuzz_msl.sh puts it under build/);
it is never committed. File names are content hashes, so reruns are stable.
"""
import ast
import hashlib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Words that make a string literal worth seeding: MSL/CUDA code, not prose.
MSL_HINTS = ("thread_position_in_grid", "kernel void", "threadgroup", "device ", "uint", "float", "half",
             "out[", "#include", "template", "simd_", "threadIdx", "blockIdx", "__syncthreads", "metal::")


def looks_like_kernel(s):
    if ";" not in s and "#include" not in s and "#define" not in s:
        return False
    if re.search(r"^\s*(import|from \S+ import|def) ", s, re.M):
        return False  # Python run by a test in a subprocess
    return any(h in s for h in MSL_HINTS)


def params(names):
    return ",".join(f"{n}:float" for n in names)


class Entry:
    """One kernel: its text(s) and what the test says about them."""

    def __init__(self, source, header="", inputs=None, outputs=None, cuda=False, program=False):
        self.source, self.header = source, header
        self.inputs, self.outputs = inputs, outputs
        self.cuda, self.program = cuda, program

    def inputs_for_fuzzer(self):
        """Every mode the text can plausibly drive, as fuzzer inputs."""
        words = []
        if self.inputs is not None:
            words.append("in=" + params(self.inputs))
        if self.outputs is not None:
            words.append("out=" + params(self.outputs))
        tail = self.source + ("\n//@header\n" + self.header if self.header else "")
        modes = []
        is_program = self.program or re.search(r"\bkernel\s+void\b", self.source)
        if is_program:
            modes += ["P", "PV"]
        if self.cuda:
            modes.append("U")
        if not is_program or not self.cuda:
            modes.append("")  # an MSL body; a whole program as a body exercises the errors
        for m in modes:
            yield (" ".join([m] + words) if m else " ".join(words)) + "\n" + tail


def python_strings(path):
    """(string constants, kernel calls) of a Python file."""
    try:
        tree = ast.parse(path.read_text(), str(path))
    except (SyntaxError, UnicodeDecodeError):
        return [], []
    named = {}  # variable -> the last string constant assigned to it
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            for t in node.targets:
                if isinstance(t, ast.Name):
                    named[t.id] = node.value.value

    def text(node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return named.get(node.id)
        return None

    def names(node):
        if isinstance(node, (ast.List, ast.Tuple)) and all(isinstance(e, ast.Constant) for e in node.elts):
            return [str(e.value) for e in node.elts]
        return None

    calls = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
        kw = {k.arg: k.value for k in node.keywords if k.arg}
        if func in ("metal_kernel", "cuda_kernel") and "source" in kw and text(kw["source"]):
            calls.append(Entry(text(kw["source"]), text(kw["header"]) or "" if "header" in kw else "",
                               names(kw["input_names"]) if "input_names" in kw else None,
                               names(kw["output_names"]) if "output_names" in kw else None,
                               cuda=func == "cuda_kernel"))
        elif "header" in kw and text(kw["header"]):  # a test's helper, e.g. run(name, source, ..., header=...)
            source = text(kw["source"]) if "source" in kw else next((t for t in map(text, node.args) if t and looks_like_kernel(t)), "")
            calls.append(Entry(source or "", text(kw["header"])))
        if func == "metal_library" and node.args and text(node.args[0]):
            calls.append(Entry(text(node.args[0]), text(node.args[1]) or "" if len(node.args) > 1 else "",
                               program=True))
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    return strings, calls


CPP_STRING = re.compile(r'R"([^(\s]*)\((.*?)\)\1"|"((?:[^"\\\n]|\\.)*)"', re.S)
ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\", "'": "'", "0": "\0", "r": "\r"}


def cpp_strings(path):
    """String literals of a C++ file, adjacent ones joined, escapes decoded."""
    src = path.read_text(errors="replace")
    out, pieces, last_end = [], [], None
    for m in CPP_STRING.finditer(src):
        if m.group(2) is not None:
            piece = m.group(2)
        else:
            piece = re.sub(r"\\(.)", lambda e: ESCAPES.get(e.group(1), e.group(1)), m.group(3))
        if pieces and src[last_end:m.start()].strip() == "":
            pieces.append(piece)
        else:
            if pieces:
                out.append("".join(pieces))
            pieces = [piece]
        last_end = m.end()
    if pieces:
        out.append("".join(pieces))
    return out


def entries():
    py_files = sorted((ROOT / "examples").rglob("*.py")) + sorted((ROOT / "tests" / "python").glob("*.py"))
    for path in py_files:
        strings, calls = python_strings(path)
        yield from calls
        cuda = "cuda" in path.name
        for s in strings:
            if looks_like_kernel(s):
                yield Entry(s, cuda=cuda)
    for path in sorted((ROOT / "tests" / "msl").glob("*.cpp")) + sorted((ROOT / "tests" / "msl").glob("*.h")):
        cuda = "cuda" in path.name
        for s in cpp_strings(path):
            if looks_like_kernel(s):
                yield Entry(s, cuda=cuda)
    for path in sorted(ROOT.glob("examples/**/*.metal")) + sorted(ROOT.glob("tests/**/*.metal")):
        yield Entry(path.read_text(errors="replace"), program=True)
    # The golden translations' C++ and CUDA forms: bodies of every dialect.
    for path in sorted((ROOT / "tests" / "msl" / "golden").glob("*.cu")):
        yield Entry(path.read_text(errors="replace"), cuda=True)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    written = set()
    kernels = 0
    for e in entries():
        kernels += 1
        for data in e.inputs_for_fuzzer():
            digest = hashlib.sha1(data.encode("utf-8", "surrogateescape")).hexdigest()
            if digest in written:
                continue
            written.add(digest)
            (out / digest).write_bytes(data.encode("utf-8", "surrogateescape"))
    print(f"fuzz corpus: {len(written)} inputs from {kernels} kernel texts in {out}")


if __name__ == "__main__":
    main()
