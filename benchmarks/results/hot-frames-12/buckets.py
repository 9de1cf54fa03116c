import json, sys, numpy as np
def load(p): d=json.load(open(p)); return np.array(d["lat"]), np.array(d["cand"])
A=[load(f'/tmp/s12/m-{sys.argv[1]}{i}.json') for i in (1,2,3)]; B=[load(f'/tmp/s12/m-{sys.argv[2]}{i}.json') for i in (1,2,3)]
ca=A[0][1]
print("p50 all:", " ".join("%.3f"%np.median(l) for l,_ in A), "|", " ".join("%.3f"%np.median(l) for l,_ in B))
print("p99 all:", " ".join("%.2f"%np.percentile(l,99) for l,_ in A), "|", " ".join("%.2f"%np.percentile(l,99) for l,_ in B))
for lo, hi in [(0,100),(100,512),(512,4096),(4096,16384),(16384,32768),(32768,10**6)]:
    m=(ca>=lo)&(ca<hi)
    print(f"cand {lo}-{hi}: n={m.sum()} {sys.argv[1]}", " ".join("%.3f"%np.median(l[m]) for l,_ in A), f"| {sys.argv[2]}", " ".join("%.3f"%np.median(l[m]) for l,_ in B))
