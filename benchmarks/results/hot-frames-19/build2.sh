# build2.sh: two fresh 10M harness builds one after the other, after (6fa61c7) then before (ef9d000); output in build-10m-r19.txt
for side in after base; do
  T=/work/h19/$side; S=/work/bench/b10m-$side-19
  rm -rf $S
  echo "# $side: python -m benchmarks run --memories 10000000 --queries 1000 --hot-only --store $S; started $(date)"
  (cd /tmp && PYTHONPATH=$T bash -c "time python -m benchmarks run --memories 10000000 --queries 1000 --hot-only --store $S --report /work/h19/b10m-$side.json" 2>&1 | grep -v "^loading\|it/s\]" | tail -30)
done
