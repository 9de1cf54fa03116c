import sys, numpy as np
import cortex, cortex.context as cm, cortex.index.hot as hm
from cortex.bench import hotframe
if len(sys.argv) > 2: hm.BLOCK_ROWS = int(sys.argv[2])
orig = hm.Cells.rows_of
st = []
def rows_of(self, cols, picked):
    r = orig(self, cols, picked)
    blocks = np.unique(self.number[picked] // 256)
    st.append((int(picked.sum()), len(self), len(blocks), len(r)))
    return r
hm.Cells.rows_of = rows_of
c = cortex.open(sys.argv[1], actor="bench-agent", mode="r")
hot = hotframe.hot_frames(c)
for f in hot[:4]:
    c.context(**f.query("short")); st.clear(); c.context(**f.query("short")); print(st)
