"""Build pre-training TFRecords from raw text: `python pretrain/build_data.py [flags]`,
the same as `electra-build-data [flags]`.

The command line is `electra_tf/cli/build_data.py` (installed by `pip install .`);
this file keeps the design card's `python pretrain/build_data.py ...` working.
"""

import sys

from electra_tf.cli.build_data import main

if __name__ == "__main__":
    sys.exit(main())
