"""`python -m benchmarks run --memories N --queries Q`: the harness in `cortex.bench.harness`;
`python -m benchmarks learn --sessions S`: the learning harness in `cortex.bench.learning`."""

import sys

if sys.argv[1:2] == ["learn"]:
    from cortex.bench.learning import main as learn_main

    sys.exit(learn_main(sys.argv[2:]))

from cortex.bench.harness import main

sys.exit(main())
