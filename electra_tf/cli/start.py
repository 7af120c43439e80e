"""How a command line starts, once its flags have parsed: TensorFlow and the
library imported (`load_library`), quietly unless `ELECTRA_TF_VERBOSE=1`."""

import contextlib
import importlib
import logging
import os
import sys
import tempfile

# Set to 1 to see TensorFlow's C++ start-up lines and its Python warnings.
VERBOSE_VARIABLE = "ELECTRA_TF_VERBOSE"


def load_library(module: str):
    """Imports TensorFlow and the library's public API (`electra_tf.api`), the
    step every command takes once its flags are read, and returns `module`
    (the library module the command runs).

    Unless `ELECTRA_TF_VERBOSE` is set (to anything but "" or "0"), TensorFlow
    starts quietly: `TF_CPP_MIN_LOG_LEVEL=3` unless the user set it (no C++
    notices: CUDA stubs, `cuInit` on a machine without a GPU, CPU features,
    oneDNN), the lines its import writes before that applies are held back
    (printed only if the import fails), and its Python logger and absl's
    report errors only (no `tf.function` retracing warnings).
    """
    if os.environ.get(VERBOSE_VARIABLE, "") in ("", "0") and (
        "tensorflow" not in sys.modules
    ):
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
        with _stderr_held_back():
            importlib.import_module("tensorflow")
            importlib.import_module("electra_tf.api")
        logging.getLogger("tensorflow").setLevel(logging.ERROR)
        importlib.import_module("absl.logging").set_verbosity("error")
    importlib.import_module("electra_tf.api")
    return importlib.import_module(module)


@contextlib.contextmanager
def _stderr_held_back():
    """File descriptor 2 goes to a temporary file inside the block (C++ code
    writes there, not to `sys.stderr`); what it caught is printed if the
    block raises, dropped otherwise."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        except BaseException:
            os.dup2(saved, 2)
            held.seek(0)
            sys.stderr.write(held.read().decode("utf-8", errors="replace"))
            raise
        finally:
            os.dup2(saved, 2)
            os.close(saved)
