import sys

from line_profiler import LineProfiler

import cortex
from cortex import context as ctx
from cortex.bench import hotframe
from cortex.index import entry

n, path = int(sys.argv[1]), sys.argv[2]
with cortex.open(path, actor="bench-agent") as c:
    frames = hotframe.hot_frames(c)
    for f in frames:
        for form in hotframe.FORMS: c.context(**f.query(form))
    fns = [ctx._trim, ctx._top, ctx._above_cutoff, entry.Columns.ids, entry.Columns.take, ctx._uris] + [getattr(ctx._Bounded, a) for a in ("__init__", "top", "_score_more", "_score_plain", "_holds_best", "_add", "_unscored_bound")]
    lp = LineProfiler(*fns)
    lp.enable()
    for r in range(30):
        for f in frames:
            b = c.context(**f.query(hotframe.FORMS[r % 3]))
    lp.disable()
    lp.print_stats(output_unit=1e-6)
