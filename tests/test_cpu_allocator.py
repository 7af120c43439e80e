"""`import electra_tf` makes TensorFlow's BFC pool the CPU allocator."""

import os
import subprocess
import sys

# Only the BFC allocator keeps statistics: with malloc, get_memory_info raises
# on some machines and reports zeros on others (an AVX-512 EPYC, same wheel).
PROBE = """
import electra_tf, tensorflow as tf
tf.constant([1.0, 2.0]) * 2.0
print(tf.config.experimental.get_memory_info("CPU:0")["peak"])
"""


def _probe(**environment):
    env = {k: v for k, v in os.environ.items() if k != "TF_CPU_ALLOCATOR_USE_BFC"}
    env.update(environment, TF_CPP_MIN_LOG_LEVEL="3")
    return subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, env=env
    )


def test_import_selects_the_bfc_cpu_allocator_unless_the_user_chose():
    pooled = _probe()
    assert pooled.returncode == 0, pooled.stderr[-2000:]
    assert int(pooled.stdout.split()[-1]) > 0
    # A user's own setting wins: malloc, which has no statistics.
    malloc = _probe(TF_CPU_ALLOCATOR_USE_BFC="false")
    if malloc.returncode == 0:
        assert int(malloc.stdout.split()[-1]) == 0
    else:
        assert "Allocator stats not available" in malloc.stderr
