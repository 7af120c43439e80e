"""Score a file of sentences with a pre-training run's export:
`python pretrain/score.py [flags]`, the same as `electra-score [flags]`.

The command line is `electra_tf/cli/score.py` (installed by `pip install .`).
"""

import sys

from electra_tf.cli.score import main

if __name__ == "__main__":
    sys.exit(main())
