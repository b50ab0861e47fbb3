"""table.py OUT N WINDOW: make bench-fleet's table (test/bench/fleet/run.sh).

Reads OUT/{stock,patched}/{rp,tp1,tp2}.{a,b} (an API server's clock, CPU
ticks, RSS, bytes sent on its port and its request and watch metrics, at
the start and the end of the window), hollow.{a,b} (each hollow process's
CPU ticks and RSS) and latency-*.txt (podlatency's lines), and prints the
patched/stock ratios as markdown, then each partition's top requests.
"""
import collections
import os
import re
import sys

out, n, window = sys.argv[1], int(sys.argv[2]), sys.argv[3]
HZ = os.sysconf("SC_CLK_TCK")
SIDES = ("stock", "patched")
PARTS = ("rp", "tp1", "tp2")
LABELS = re.compile(r'(\w+)="([^"]*)"')


def read_snapshot(path):
    s = {"requests": collections.Counter(), "clients": collections.Counter(), "watches": 0.0}
    for line in open(path):
        if line.startswith("apiserver_request_total{"):
            labels, value = line.rsplit(" ", 1)
            d = dict(LABELS.findall(labels))
            s["requests"][(d.get("verb", ""), d.get("resource", ""), d.get("subresource", ""))] += float(value)
            s["clients"][(d.get("verb", ""), d.get("resource", ""), d.get("subresource", ""), d.get("client", "").split(" ")[0])] += float(value)
        elif line.startswith("apiserver_longrunning_gauge{"):
            labels, value = line.rsplit(" ", 1)
            if dict(LABELS.findall(labels)).get("verb") == "WATCH":
                s["watches"] += float(value)
        else:
            k, _, v = line.strip().partition(" ")
            s[k] = v
    return s


def partition(side, part):
    a = read_snapshot(os.path.join(out, side, part + ".a"))
    b = read_snapshot(os.path.join(out, side, part + ".b"))
    secs = float(b["time"]) - float(a["time"])
    cpu = (sum(map(int, b["stat"].split())) - sum(map(int, a["stat"].split()))) / HZ
    reqs = b["requests"] - a["requests"]
    by_verb = collections.Counter()
    for (verb, _res, _sub), v in reqs.items():
        by_verb[verb] += v
    return {
        "requests/s": sum(reqs.values()) / secs,
        "requests/s but events": sum(v for k, v in reqs.items() if k[1] != "events") / secs,
        "by verb": {k: v / secs for k, v in by_verb.items()},
        "top": sorted(((v / secs, k) for k, v in (b["clients"] - a["clients"]).items()), reverse=True)[:8],
        "watches": b["watches"],
        "bytes sent/s": (int(b["bytes"] or 0) - int(a["bytes"] or 0)) / secs,
        "CPU (cores)": cpu / secs,
        "RSS (MiB)": int(b["rss_kb"]) / 1024,
        "RSS anonymous (MiB)": int(b["rss_anon_kb"]) / 1024 if b.get("rss_anon_kb") else None,
    }


def hollow(side):
    """Per hollow node (a kubelet and a proxy): CPU and RSS, and each
    morph's CPU and anonymous RSS where the snapshot names it (a sixth
    field, from 2026-11-29)."""
    def read(tag):
        d = {}
        for line in open(os.path.join(out, side, "hollow." + tag)):
            f = line.split()
            if len(f) in (4, 5, 6):
                d[f[0]] = (int(f[1]) + int(f[2]), int(f[3]), int(f[4]) if len(f) >= 5 else None, f[5] if len(f) == 6 else None)
        return d
    a, b = read("a"), read("b")
    secs = float(read_snapshot(os.path.join(out, side, "rp.b"))["time"]) - float(read_snapshot(os.path.join(out, side, "rp.a"))["time"])
    pids = sorted(set(a) & set(b))
    if not pids:
        return {"CPU (cores)": 0, "RSS (MiB)": 0, "RSS anonymous (MiB)": None}
    def cpu_of(ps):
        return sum(b[p][0] - a[p][0] for p in ps) / HZ / secs
    cpu = cpu_of(pids)
    rss = sum(b[p][1] for p in pids) / 1024
    nodes = len(pids) / 2  # a kubelet and a proxy each
    anon = None
    if all(b[p][2] is not None for p in pids):
        anon = sum(b[p][2] for p in pids) / 1024 / nodes
    r = {"CPU (cores)": cpu / nodes, "RSS (MiB)": rss / nodes, "RSS anonymous (MiB)": anon}
    for morph in ("kubelet", "proxy"):
        mine = [p for p in pids if b[p][3] == morph]
        if mine and all(b[p][2] is not None for p in mine):
            # Per process of the morph, where the node's figures are per pair.
            r[morph + ": CPU (cores)"] = cpu_of(mine) / len(mine)
            r[morph + ": RSS anonymous (MiB)"] = sum(b[p][2] for p in mine) / 1024 / len(mine)
    return r


def latency(side):
    """Created to Running, and its two parts where the watch saw the pod
    bound first: created to bound (the TP's scheduler) and bound to Running
    (the node)."""
    ms, sched, node = [], [], []
    for name in sorted(os.listdir(os.path.join(out, side))):
        if name.startswith("latency-") and name.endswith(".txt"):
            for line in open(os.path.join(out, side, name)):
                f = line.split()
                if len(f) in (3, 4) and f[0] == "pod":
                    ms.append(int(f[2]))
                    if len(f) == 4 and int(f[3]) >= 0:
                        sched.append(int(f[3]))
                        node.append(int(f[2]) - int(f[3]))
    if not ms:
        return None

    def pick(v, q):
        v = sorted(v)
        return v[min(len(v) - 1, int(q * len(v)))] if v else None

    r = {"pods": len(ms), "split": len(sched)}
    for what, v in (("", ms), ("created to bound, ", sched), ("bound to Running, ", node)):
        r[what + "p50 (ms)"], r[what + "p99 (ms)"] = pick(v, 0.50), pick(v, 0.99)
    return r


def fmt(v):
    if isinstance(v, float):
        return "%.3g" % v if abs(v) < 100 else "%.0f" % v
    return str(v)


def ratio(p, s):
    if s == 0:
        return "n/a (stock 0)" if p else "1 (both 0)"
    return "%.2f" % (p / s)


data = {side: {part: partition(side, part) for part in PARTS} for side in SIDES}
hol = {side: hollow(side) for side in SIDES}
lat = {side: latency(side) for side in SIDES}

print("bench-fleet: %d hollow nodes, a window of %s s; patched/stock\n" % (n, window))
print("| what | stock | patched | patched/stock |")
print("| --- | --- | --- | --- |")
for part in PARTS:
    for key in ("requests/s", "requests/s but events", "watches", "bytes sent/s", "CPU (cores)", "RSS (MiB)", "RSS anonymous (MiB)"):
        s, p = data["stock"][part][key], data["patched"][part][key]
        if s is None or p is None:
            continue
        print("| %s API server: %s | %s | %s | %s |" % (part, key, fmt(s), fmt(p), ratio(p, s)))
    verbs = sorted(set(data["stock"][part]["by verb"]) | set(data["patched"][part]["by verb"]))
    for verb in verbs:
        s, p = data["stock"][part]["by verb"].get(verb, 0.0), data["patched"][part]["by verb"].get(verb, 0.0)
        if s + p >= 0.05:
            print("| %s API server: %s/s | %s | %s | %s |" % (part, verb, fmt(s), fmt(p), ratio(p, s)))
for key in ("CPU (cores)", "RSS (MiB)", "RSS anonymous (MiB)"):
    s, p = hol["stock"][key], hol["patched"][key]
    if s is None or p is None:
        continue
    print("| per hollow node (kubelet + proxy): %s | %s | %s | %s |" % (key, fmt(s), fmt(p), ratio(p, s)))
for morph in ("kubelet", "proxy"):
    for key in ("CPU (cores)", "RSS anonymous (MiB)"):
        s, p = hol["stock"].get(morph + ": " + key), hol["patched"].get(morph + ": " + key)
        if s is not None and p is not None:
            print("| per hollow %s: %s | %s | %s | %s |" % (morph, key, fmt(s), fmt(p), ratio(p, s)))
if lat["stock"] and lat["patched"]:
    for key in ("p50 (ms)", "p99 (ms)"):
        s, p = lat["stock"][key], lat["patched"][key]
        print("| pod start-up, created to Running (%d/%d pods): %s | %s | %s | %s |" % (lat["stock"]["pods"], lat["patched"]["pods"], key, s, p, ratio(p, s)))
    for part in ("created to bound, ", "bound to Running, "):
        for key in ("p50 (ms)", "p99 (ms)"):
            s, p = lat["stock"][part + key], lat["patched"][part + key]
            if s is not None and p is not None:
                print("| pod start-up, %s(%d/%d pods seen bound first): %s | %s | %s | %s |" % (part, lat["stock"]["split"], lat["patched"]["split"], key, s, p, ratio(p, s)))
else:
    print("| pod start-up | %s | %s | no figures |" % (lat["stock"], lat["patched"]))

print("\nTop requests a second (verb resource/subresource, client) over the window:\n")
for side in SIDES:
    for part in PARTS:
        top = ", ".join("%s %s%s (%s) %.2f" % (k[0], k[1], "/" + k[2] if k[2] else "", k[3] or "?", v) for v, k in data[side][part]["top"])
        print("- %s, %s: %s" % (side, part, top))
