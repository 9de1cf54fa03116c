#!/bin/bash
# bwcold.sh SIDES...: for each side (before|after), a writer of that side's code flushes 1,200 small
# batches into the 10M store and stays open; cold3.py then times 2 x 10 fresh follower processes of
# the same code beside it. Then the writer closes.
STORE=/work/bench/b9-l0t8
cd /tmp
for side in "$@"; do
  PP=/tmp/wt-$side
  rm -f /tmp/exp11/fifo; mkfifo /tmp/exp11/fifo
  PYTHONPATH=$PP python /tmp/exp11/grow3.py $STORE 1200 < /tmp/exp11/fifo > /tmp/exp11/grow-$side.out 2>&1 &
  WPID=$!
  exec 3>/tmp/exp11/fifo
  until grep -q manifests /tmp/exp11/grow-$side.out; do sleep 1; if ! kill -0 $WPID 2>/dev/null; then cat /tmp/exp11/grow-$side.out; exit 1; fi; done
  echo "$side: $(cat /tmp/exp11/grow-$side.out)"
  PYTHONPATH=$PP python /tmp/exp11/cold3.py $STORE 10 "$side beside writer"
  PYTHONPATH=$PP python /tmp/exp11/cold3.py $STORE 10 "$side beside writer"
  PYTHONPATH=$PP python /tmp/exp11/reopen.py $STORE "$side beside writer:"
  exec 3>&-
  wait $WPID
done
