"""tf.distribute: a mirrored step equals a single-device step."""

import json
import pathlib
import subprocess
import sys

HERE = pathlib.Path(__file__).parent


def test_mirrored_two_replicas_match_one_device():
    result = subprocess.run(
        [sys.executable, str(HERE / "mirrored_step_check.py")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    figures = json.loads(result.stdout.strip().splitlines()[-1])
    assert figures["max_update"] > 1e-3  # the step did move the weights
    assert figures["max_difference"] < 1e-5, figures
