"""Run the hot-frames property check directly on fixed seeds (no shrinking): exit 1 at the first difference."""
import random, sys, pathlib, tempfile
sys.path.insert(0, "tests")
import test_hot_frames as T
import cortex.context as cm
class F:
    def __init__(self): self.d = pathlib.Path(tempfile.mkdtemp()); self.n = 0
    def mktemp(self, name): self.n += 1; p = self.d / f"{name}{self.n}"; p.mkdir(); return p
cm._Bounded = T._CountedBounded
cm._worth_bounding = lambda part, now, weights: True
for seed in range(int(sys.argv[1])):
    for ranking, bf in (((256, 64), 1), ((2, 64), 1), ((16, 3), 3)):
        cm.MAX_REACHABLE_URIS = ranking[1]
        try:
            T._check_against_full_scan(F(), random.Random(seed), ranking[0], 0, 8, bf)
        except AssertionError as e:
            print("FAILED at seed", seed, ranking, bf); sys.exit(1)
print("no difference", T._CountedBounded.calls, T._CountedBounded.unscored)
