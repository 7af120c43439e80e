"""What pre-training buys: `python finetune/demo.py`, the same as
`electra-finetune-demo`, after `python pretrain/run.py`.

The command line is `electra_tf/cli/finetune_demo.py`; see its `--help`.
"""

import sys

from electra_tf.cli.finetune_demo import main

if __name__ == "__main__":
    sys.exit(main())
