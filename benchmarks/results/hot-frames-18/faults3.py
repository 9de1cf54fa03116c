import sys, shutil, subprocess, os
faults = {
 "bound_no_access": ("cortex/salience/score.py", "np.full(k, access, dtype=np.uint32)", "np.full(k, 0, dtype=np.uint32)", "group_bound"),
 "bound_no_margin_min": ("cortex/salience/score.py", "np.full(k, last_used, dtype=np.uint64)", "np.full(k, last_used - 1, dtype=np.uint64)", "group_bound"),
 "locate_run_short": ("cortex/index/hot.py", "if found < end and ref_lo[found] == lo[row]:", "if found < end - 1 and ref_lo[found] == lo[row]:", "locate_finds"),
}
name = sys.argv[1]; f, a, b, k = faults[name]
d = f"/tmp/fault-{name}"; shutil.rmtree(d, ignore_errors=True)
shutil.copytree("/work/main/cortex", d + "/cortex"); shutil.copytree("/work/main/tests", d + "/tests"); shutil.copy("/work/main/pyproject.toml", d)
p = d + "/" + f; s = open(p).read(); assert s.count(a) == 1, name; open(p, "w").write(s.replace(a, b))
r = subprocess.run([sys.executable, "-m", "pytest", "-x", "-q", "tests/test_hot_frames.py", "-k", k, "-p", "no:cacheprovider", "-W", "ignore"], cwd=d, env={**os.environ, "PYTHONPATH": d}, capture_output=True, text=True)
print(name, "rc", r.returncode)
