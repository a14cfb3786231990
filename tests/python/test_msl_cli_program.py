"""python -m alloy.msl --program: every kernel of a whole Metal program
translated and compiled (CPU C++ and CUDA with NVRTC), without launching it;
failures quote the user's line and set the exit status."""
import pathlib

import pytest

from alloy.msl.__main__ import main

GUIDE = pathlib.Path(__file__).resolve().parents[2] / "examples" / "guide"


@pytest.mark.parametrize("target", ["cpp", "cuda"])
def test_every_kernel_of_a_program_compiles(capsys, target):
    assert main([str(GUIDE / "access_patterns.metal"), "--program", "--target", target]) == 0
    out = capsys.readouterr().out
    for name in ("column_access_bad", "row_access_good", "column_via_transpose"):
        assert f"kernel '{name}': compiled for" in out


def test_host_name_instantiations_are_kernels(capsys):
    assert main([str(GUIDE / "binary_op.metal"), "--program", "--target", "cuda"]) == 0
    out = capsys.readouterr().out
    assert "kernel 'binary_add_f32'" in out and "kernel 'binary_add_f16'" in out


def test_a_kernel_that_does_not_compile_is_quoted(capsys):
    # The guide's page calls simdgroup_matrix_initialize, which Metal does not have.
    assert main([str(GUIDE / "matmul_simdgroup.metal"), "--program", "--target", "cuda"]) == 1
    err = capsys.readouterr().err
    assert "kernel 'matmul_simdgroup'" in err and "simdgroup_matrix_initialize(0, acc);" in err


def test_a_program_metal_refuses(tmp_path, capsys):
    f = tmp_path / "none.metal"
    f.write_text("#include <metal_stdlib>\nconstant float k = 2;\n")
    assert main([str(f), "--program"]) == 1
    assert "declares no kernel" in capsys.readouterr().err


def test_function_constants_compile_undefined(tmp_path, capsys):
    f = tmp_path / "fc.metal"
    f.write_text("#include <metal_stdlib>\nusing namespace metal;\n"
                 "constant bool flag [[function_constant(0)]];\n"
                 "kernel void k(device float* o [[buffer(0)]], uint i [[thread_position_in_grid]]) {\n"
                 "  o[i] = is_function_constant_defined(flag) && flag ? 1.0f : 2.0f;\n}\n")
    assert main([str(f), "--program", "--target", "cpp"]) == 0
    assert "kernel 'k': compiled for this CPU" in capsys.readouterr().out


def test_print_shows_each_kernels_translation(capsys):
    # --print: the source each kernel compiles from, entry point and glue included.
    assert main([str(GUIDE / "access_patterns.metal"), "--program", "--target", "cuda", "--print"]) == 0
    out = capsys.readouterr().out
    for name in ("column_access_bad", "row_access_good", "column_via_transpose"):
        assert f"// ---- kernel '{name}' (cuda) ----" in out
    assert out.count('extern "C" __global__ void alloy_kernel_main(') == 3
    # The 0-d input N is read at entry, before the thread ids.
    transpose = out[out.index("// ---- kernel 'column_via_transpose'"):]
    assert "  const uint in1_value = *in1;\n  alloy_msl::ThreadIds t;" in transpose


def test_print_of_a_refused_program_is_the_error(tmp_path, capsys):
    f = tmp_path / "none.metal"
    f.write_text("#include <metal_stdlib>\nconstant float k = 2;\n")
    assert main([str(f), "--program", "--print"]) == 1
    captured = capsys.readouterr()
    assert "declares no kernel" in captured.err and "alloy_kernel_main" not in captured.out


@pytest.mark.parametrize("target", ["cpp", "cuda"])
def test_quantized_tensor_parameters_bind_their_scales(capsys, target):
    # An MXFP8 tensor parameter is two buffers (codes and scales plane), as
    # metal_library binds it; the seed's quantized matmul compiles.
    example = GUIDE.parent / "metal4" / "mxfp8_matmul.metal"
    assert main([str(example), "--program", "--target", target]) == 0
    assert "compiled for" in capsys.readouterr().out


def test_a_cuda_check_of_one_kernel_keeps_its_cubin_when_asked(tmp_path, monkeypatch, capsys):
    # ALLOY_MSL_CUBIN_OUT: the compiled kernel, for cuobjdump -sass without a GPU.
    body = tmp_path / "k.metal"
    body.write_text("uint i = thread_position_in_grid.x;\nout[i] = inp[i] * 2.0f;\n")
    cubin = tmp_path / "k.cubin"
    monkeypatch.setenv("ALLOY_MSL_CUBIN_OUT", str(cubin))
    assert main([str(body), "--input", "inp:float", "--output", "out:float", "--target", "cuda"]) == 0
    assert "compiled for sm_" in capsys.readouterr().out
    data = cubin.read_bytes()
    assert data[:4] == b"\x7fELF" and b"alloy_kernel_main" in data


def test_a_cubin_that_cannot_be_written_is_an_error(tmp_path, monkeypatch, capsys):
    body = tmp_path / "k.metal"
    body.write_text("uint i = thread_position_in_grid.x;\nout[i] = inp[i] * 2.0f;\n")
    monkeypatch.setenv("ALLOY_MSL_CUBIN_OUT", str(tmp_path / "no_such_folder" / "k.cubin"))
    assert main([str(body), "--input", "inp:float", "--output", "out:float", "--target", "cuda"]) == 1
    captured = capsys.readouterr()
    assert "cannot write" in captured.out + captured.err
