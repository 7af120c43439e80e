"""bench/run_info.py: the header of every result JSON."""

import os

import pytest

from bench.run_info import machine

MEMINFO = "MemTotal:       25165824 kB\nMemFree:        1000 kB\n"


@pytest.mark.parametrize(
    "flags, named",
    [
        ("fpu sse2 avx avx2 fma avx512f avx512dq", "AMD EPYC (AVX-512)"),
        ("fpu sse2 avx avx2 fma", "AMD EPYC (AVX2)"),
        ("fpu sse2", "AMD EPYC"),
    ],
)
def test_machine_names_the_widest_vector_instructions(tmp_path, flags, named):
    # Two CPUs: the first one's fields are read.
    cpu = f"processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: {flags}\n\n"
    (tmp_path / "cpuinfo").write_text(cpu + cpu.replace(": 0", ": 1"))
    (tmp_path / "meminfo").write_text(MEMINFO)
    found = machine(tmp_path / "cpuinfo", tmp_path / "meminfo")
    assert found == f"{named}, {os.cpu_count()} cores, 24 GiB"


def test_machine_without_proc_files_says_so(tmp_path):
    assert machine(tmp_path / "none", tmp_path / "none") == (
        f"unknown CPU, {os.cpu_count()} cores"
    )


def test_commit_flags_changed_code_but_not_changed_results(tmp_path, monkeypatch):
    import subprocess

    from bench import run_info

    def git(*args):
        subprocess.run(
            ["git", "-C", str(tmp_path), *args], check=True, capture_output=True
        )

    git("init", "-q")
    for path in ("electra_tf/x.py", "bench/results/study.json"):
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("0\n")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    monkeypatch.setattr(run_info, "REPO", tmp_path)
    head = run_info.commit()
    assert len(head) >= 7 and "+" not in head
    (tmp_path / "bench/results/study.json").write_text("1\n")  # a rewritten report
    assert run_info.commit() == head
    (tmp_path / "electra_tf/x.py").write_text("1\n")
    assert run_info.commit() == head + "+changes"
