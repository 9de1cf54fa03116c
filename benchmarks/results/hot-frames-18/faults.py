import sys, shutil, subprocess, os
faults = {
 "min_last_used": ("    return (int(part[\"last_used\"].max()),", "    return (int(part[\"last_used\"].min()),"),
 "no_minus_inf": ("            values[at[rows[at] == self._going]] = -np.inf\n", "            pass\n"),
 "no_counts": ("bounds = upper_bounds(last_used, access, citations, np.arange(importance + 1", "bounds = upper_bounds(last_used, 0, 0, np.arange(importance + 1"),
 "ascending": ("        groups.sort()\n", "        groups.sort(reverse=True)\n"),
 "ge_not_gt_no_margin": ("        return sum(int(np.count_nonzero(values > above)) for", "        return sum(int(np.count_nonzero(values >= above / (1.0 + 1e-9))) for"),
 "groups_any_time": ("    if kept is None or kept.weights != weights or kept.now > now:", "    if kept is None or kept.weights != weights:"),
 "groups_any_weights": ("    if kept is None or kept.weights != weights or kept.now > now:", "    if kept is None or kept.now > now:"),
}
name = sys.argv[1]
a, b = faults[name]
d = f"/tmp/fault-{name}"
shutil.rmtree(d, ignore_errors=True)
shutil.copytree("/work/main/cortex", d + "/cortex"); shutil.copytree("/work/main/tests", d + "/tests"); shutil.copy("/work/main/pyproject.toml", d)
p = d + "/cortex/context.py"; s = open(p).read(); assert s.count(a) == 1, name; open(p, "w").write(s.replace(a, b))
how = sys.argv[2] if len(sys.argv) > 2 else "direct"  # direct: faultrun.py on 30 fixed seeds; pytest: the property test
check = ([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "faultrun.py"), "30"] if how == "direct" else
         [sys.executable, "-m", "pytest", "-x", "-q", "tests/test_hot_frames.py", "-k", os.environ.get("K", "partially_ranked"), "-p", "no:cacheprovider", "-W", "ignore", "--hypothesis-seed=0"])
r = subprocess.run(check,
                   cwd=d, env={**os.environ, "PYTHONPATH": d}, capture_output=True, text=True)
print(name, "rc", r.returncode, r.stdout.strip()[-200:], r.stderr.strip()[-300:])
