"""`python -m benchmarks run --memories N --queries Q`: the harness in `cortex.bench.harness`."""

import sys

from cortex.bench.harness import main

sys.exit(main())
