"""Convert checkpoints (Hugging Face, TF1, keras-hub <-> ours):
`python pretrain/convert.py [flags]`, the same as `electra-convert [flags]`.

The command line is `electra_tf/cli/convert.py` (installed by `pip install .`);
this file keeps the design card's `python pretrain/convert.py ...` working.
"""

import sys

from electra_tf.cli.convert import main

if __name__ == "__main__":
    sys.exit(main())
