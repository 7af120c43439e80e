"""Fine-tune ELECTRA on a GLUE task: `python finetune/run.py [flags]`,
the same as `electra-finetune [flags]`.

The command line is `electra_tf/cli/finetune.py` (installed by `pip install .`);
this file keeps the design card's `python finetune/run.py ...` working.
"""

import sys

from electra_tf.cli.finetune import main

if __name__ == "__main__":
    sys.exit(main())
