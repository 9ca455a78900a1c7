"""`python -m crsbench.cli ...`: the same as the `crsbench` command."""

import sys

from crsbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
