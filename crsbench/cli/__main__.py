"""`python -m crsbench.cli ...`: the same as the `crsbench` command."""

import sys

from crsbench.cli import main

sys.exit(main())
