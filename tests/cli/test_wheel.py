"""`pip install .`: the wheel carries the package and its assets, and its console
scripts run the demo from a directory outside the checkout."""

import os
import pathlib
import shutil
import subprocess
import sys
import sysconfig
import zipfile

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]


def _run(command, cwd, timeout=900):
    result = subprocess.run(
        command,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3", "PYTHONPATH": ""},
    )
    assert result.returncode == 0, (result.stdout[-2000:], result.stderr[-3000:])
    return result


@pytest.mark.slow
def test_the_wheel_installs_and_runs_the_demo(tmp_path):
    # Build from a copy, so that the build leaves nothing in the checkout.
    source = tmp_path / "source"
    ignore = shutil.ignore_patterns("__pycache__", "*.egg-info")
    shutil.copytree(REPO / "electra_tf", source / "electra_tf", ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", source)
    dist = tmp_path / "dist"
    _run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", dist, source],
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("electra_tf-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    for asset in (
        "electra_tf/assets/vocab.txt",
        "electra_tf/assets/corpus/brown.txt.gz",
        "electra_tf/assets/tasks/rt_polarity/train.tsv",
        "electra_tf/models/encoder.py",
        "electra_tf/cli/pretrain.py",
    ):
        assert asset in names, asset

    # A fresh virtual environment with only the wheel installed; its
    # dependencies (TensorFlow & co., gigabytes) are this environment's,
    # seen through a .pth file instead of downloaded again.
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", venv], cwd=tmp_path)
    python = venv / "bin" / "python"
    site = _run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        cwd=tmp_path,
    ).stdout.strip()
    ours = sysconfig.get_paths()["purelib"]
    (pathlib.Path(site) / "dependencies.pth").write_text(ours + "\n")
    _run([python, "-m", "pip", "install", "--no-deps", wheel], cwd=tmp_path)

    outside = tmp_path / "elsewhere"
    outside.mkdir()
    where = _run(
        [python, "-c", "import electra_tf; print(electra_tf.__file__)"], cwd=outside
    )
    assert where.stdout.strip().startswith(site), where.stdout
    scripts = (
        "electra-build-data",
        "electra-convert",
        "electra-finetune",
        "electra-finetune-demo",
        "electra-score",
        "electra-export-litert",
    )
    for script in scripts:
        assert "usage:" in _run([venv / "bin" / script, "--help"], outside).stdout
    help_text = _run([venv / "bin" / "electra-pretrain", "--help"], outside).stdout
    assert "--preset" in help_text
    # A few steps of the demo: learn a vocabulary from the bundled corpus, build
    # the TFRecords, train, evaluate and export.
    _run(
        [
            venv / "bin" / "electra-pretrain",
            "--steps",
            "4",
            "--checkpoint-every",
            "2",
            "--learn-vocab-size",
            "1000",
            "--jit",
            "off",
            "--hparams",
            '{"eval_steps": 2}',
        ],
        cwd=outside,
    )
    run = outside / "runs" / "pretrain"
    assert (run / "eval_results.json").exists()
    assert (run / "export" / "discriminator.keras").exists()
    # The demo's export scores a file of sentences.
    (outside / "sentences.txt").write_text("the jury said\nsaid the jury\n")
    _run(
        [
            venv / "bin" / "electra-score",
            "--input",
            "sentences.txt",
            "--output",
            "scores.tsv",
        ],
        cwd=outside,
    )
    rows = (outside / "scores.tsv").read_text().splitlines()
    assert rows[0] == "score\ttoken_count\tsentence" and len(rows) == 3
