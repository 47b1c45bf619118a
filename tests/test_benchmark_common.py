"""The benchmark table names the CPU's vector ISA: rows from hosts sold under one model
name (AVX2 only vs AVX-512 + AVX512_BF16) differ 2x in matmul rate."""

from experiments.benchmarks.common import cpu_description

CPUINFO = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC
flags\t\t: fpu sse2 avx fma avx2 avx512f avx512dq avx512_bf16 avx512vl
processor\t: 1
model name\t: AMD EPYC
"""


def test_cpu_description_names_model_and_wide_vector_units():
    assert cpu_description(CPUINFO) == "AMD EPYC (family 25 model 17), AVX-512 + AVX512_BF16"


def test_cpu_description_avx2_host_and_missing_fields():
    avx2 = CPUINFO.replace(" avx512f avx512dq avx512_bf16 avx512vl", "")
    assert cpu_description(avx2) == "AMD EPYC (family 25 model 17), AVX2 + FMA"
    assert cpu_description("model name\t: Some CPU\n") == "Some CPU"


def test_a_result_file_says_the_command_that_wrote_it(monkeypatch):
    import os

    from experiments.benchmarks import common

    script = os.path.join(os.path.dirname(common.__file__), "roofline.py")
    monkeypatch.setattr("sys.argv", [script, "--steps", "2", "--out_json", "a b.json"])
    assert common._command_line() == (
        "python -m experiments.benchmarks.roofline --steps 2 --out_json 'a b.json'"
    )
    monkeypatch.setattr("sys.argv", ["/usr/bin/pytest", "-q"])  # not a benchmark's own run
    assert common._command_line() is None
