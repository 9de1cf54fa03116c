import sys, shutil, subprocess, os
faults = {
 "min_last_used": ("    return (int(part[\"last_used\"].max()),", "    return (int(part[\"last_used\"].min()),"),
 "no_minus_inf": ("            values[at[rows[at] == self._going]] = -np.inf\n", "            pass\n"),
 "no_counts": ("bounds = upper_bounds(last_used, access, citations, np.arange(importance + 1", "bounds = upper_bounds(last_used, 0, 0, np.arange(importance + 1"),
 "ascending": ("        groups.sort()\n", "        groups.sort(reverse=True)\n"),
 "ge_not_gt_no_margin": ("        return sum(int(np.count_nonzero(values > above)) for", "        return sum(int(np.count_nonzero(values >= above / (1.0 + 1e-9))) for"),
}
name = sys.argv[1]
a, b = faults[name]
d = f"/tmp/fault-{name}"
shutil.rmtree(d, ignore_errors=True)
shutil.copytree("/work/main/cortex", d + "/cortex"); shutil.copytree("/work/main/tests", d + "/tests"); shutil.copy("/work/main/pyproject.toml", d)
p = d + "/cortex/context.py"; s = open(p).read(); assert s.count(a) == 1, name; open(p, "w").write(s.replace(a, b))
r = subprocess.run([sys.executable, "/work/h18/faultrun.py", "30"],
                   cwd=d, env={**os.environ, "PYTHONPATH": d}, capture_output=True, text=True)
print(name, "rc", r.returncode, r.stdout.strip()[-200:], r.stderr.strip()[-300:])
