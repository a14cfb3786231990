"""python -m alloy.msl: translate an MLX metal_kernel body for a target, compile
it, and print the result or the compiler's errors mapped to the body's own
lines. Exit status 0 when it compiles, 1 when it does not, 2 on bad usage.
With --cuda-body the body is a cuda_kernel body (CUDA), checked for --target cuda.
With --program the file is a whole Metal program (mx.fast.metal_library): every
kernel is translated and compiled with its parameters' own types.

Examples:
    python -m alloy.msl kernel.metal --input inp:float16_t --output out:float16_t \\
        --template T=float --target cuda
    python -m alloy.msl kernel.cu --cuda-body --input inp:float --output out:float
    python -m alloy.msl shaders.metal --program --target cuda
"""
import argparse
import sys

from alloy.core import _msl

TARGETS = ("cpp", "cuda", "metal")


def param(text, what):
    name, sep, typ = text.partition(":")
    if not sep or not name or not typ:
        raise argparse.ArgumentTypeError(f"{what} must look like NAME:TYPE (e.g. inp:float), not {text!r}")
    scalar = typ.endswith("&")
    return (name, typ.rstrip("&"), scalar)


def template(text):
    name, sep, value = text.partition("=")
    if not sep:
        raise argparse.ArgumentTypeError(f"template must look like NAME=VALUE, not {text!r}")
    if value in ("true", "false"):
        return (name, "bool", value)
    if value.lstrip("-").isdigit():
        return (name, "int", value)
    return (name, "type", value)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m alloy.msl", description=__doc__.split("\n\n")[0])
    ap.add_argument("source", help="file holding the kernel body ('-' for stdin)")
    ap.add_argument("--header", help="file holding the header (helpers, #defines)")
    ap.add_argument("--name", default="kernel")
    ap.add_argument("--input", action="append", default=[], type=lambda t: param(t, "--input"),
                    help="NAME:TYPE in MSL spelling (float, float16_t, int32_t...); TYPE& for a 0-d input")
    ap.add_argument("--output", action="append", default=[], type=lambda t: param(t, "--output"))
    ap.add_argument("--template", action="append", default=[], type=template, help="NAME=VALUE (type, int or bool)")
    ap.add_argument("--target", choices=TARGETS, default="cpp")
    ap.add_argument("--arch", default="sm_90a", help="CUDA architecture for --target cuda (sm_90a: what Hopper GPUs run)")
    ap.add_argument("--atomic-outputs", action="store_true")
    ap.add_argument("--math-mode", default="safe", choices=("safe", "relaxed", "fast"))
    ap.add_argument("--print", action="store_true", help="print the translated source")
    ap.add_argument("--cuda-body", action="store_true",
                    help="the body is CUDA (mx.fast.cuda_kernel); implies --target cuda")
    ap.add_argument("--program", action="store_true",
                    help="the file is a whole Metal program: compile each of its kernels")
    ap.add_argument("--threadgroup-bytes", type=int, default=32768,
                    help="--program: bytes given to each threadgroup parameter (sized arrays must fit)")
    args = ap.parse_args(argv)
    if args.program:
        return program(args)
    dialect = "cuda" if args.cuda_body else "metal"
    if args.cuda_body:
        args.target = "cuda"
    if not args.output:
        ap.error("at least one --output NAME:TYPE is needed")
    source = sys.stdin.read() if args.source == "-" else open(args.source).read()
    header = open(args.header).read() if args.header else ""
    common = (args.name, source, header, args.input, args.output, args.template, args.atomic_outputs,
              args.math_mode)
    try:
        text = _msl.translate(*common, args.target, dialect)
    except Exception as e:  # front-end errors quote the user's line
        print(e, file=sys.stderr)
        return 1
    if args.print or args.target == "metal":
        print(text)
    if args.target == "metal":
        return 0
    ok, message = _msl.compile(*common, args.target, args.arch, dialect)
    print(message, file=sys.stdout if ok else sys.stderr)
    return 0 if ok else 1


def program(args):
    source = sys.stdin.read() if args.source == "-" else open(args.source).read()
    header = open(args.header).read() if args.header else ""
    target = "cpp" if args.target == "metal" else args.target
    if args.print:
        try:
            for name, text in _msl.translate_program(source, header, args.math_mode, target):
                print(f"// ---- kernel '{name}' ({target}) ----\n{text}")
        except Exception as e:  # front-end errors quote the user's line
            print(e, file=sys.stderr)
            return 1
    results = _msl.compile_program(source, header, args.math_mode, target, args.arch, args.threadgroup_bytes)
    failed = 0
    for name, ok, message in results:
        if not name:  # the program itself was refused
            print(message, file=sys.stderr)
            return 1
        failed += not ok
        print(f"kernel '{name}': {message}", file=sys.stdout if ok else sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
