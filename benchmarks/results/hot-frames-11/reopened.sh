#!/bin/bash
# reopened.sh SIDES...: for each side, its writer opens and closes the 10M store (a fresh MANIFEST), then
# cold3.py times 10 fresh follower processes of the same code.
STORE=/work/bench/b9-l0t8
cd /tmp
for side in "$@"; do
  PYTHONPATH=/tmp/wt-$side python -c "from cortex.storage.rocksdb import open_rocksdb; open_rocksdb('$STORE', read_only=False, cache_mb=8, sync=False).close()"
  PYTHONPATH=/tmp/wt-$side python /tmp/exp11/cold3.py $STORE 10 "$side reopened"
done
