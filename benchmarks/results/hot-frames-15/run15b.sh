#!/bin/bash
cd /tmp
bash /work/bench/ab14t.sh 3 r15f 10000000 /work/bench/b10m-i14 /tmp/wt-base /work/main > /work/bench/r15f.txt 2>&1
bash /work/bench/ab14t.sh 3 r15g 1000000 /work/bench/b1m-o /tmp/wt-base /work/main > /work/bench/r15g.txt 2>&1
for t in base new; do if [ $t = base ]; then T=/tmp/wt-base; else T=/work/main; fi
  PYTHONPATH=$T python /work/main/benchmarks/results/hot-frames-13/sqlab.py /work/bench/b100k-o 100000 /work/bench/sq100k.sqlite3 $t-100k
  PYTHONPATH=$T python /work/main/benchmarks/results/hot-frames-13/sqlab.py /work/bench/b1m-o 1000000 /work/bench/sq1m.sqlite3 $t-1m
done > /work/bench/sq15f.txt 2>&1
echo done
