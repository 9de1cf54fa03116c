"""`python -m cortex`: the same command line as `cortex`."""

import sys

from .cli import main

sys.exit(main())
