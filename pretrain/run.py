"""Pre-train ELECTRA: `python pretrain/run.py [flags]`,
the same as `electra-pretrain [flags]`.

The command line is `electra_tf/cli/pretrain.py` (installed by `pip install .`);
this file keeps the design card's `python pretrain/run.py ...` working.
"""

import sys

from electra_tf.cli.pretrain import main

if __name__ == "__main__":
    sys.exit(main())
