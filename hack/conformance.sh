#!/usr/bin/env bash
# conformance.sh SRC: Kubernetes's own [sig-network] DNS and Services e2e
# specs, from Arktos's tree SRC (WORK/src of make arktos-patch), against the
# running local cluster (make cluster-up), through tp1 and then tp2
# (make check-conformance; docs/conformance.md).
#
#   1. hack/conformance-build.sh SRC OUT: e2e.test, ginkgo and the test
#      images, built here (cached);
#   2. the images loaded into both nodes' dockerd;
#   3. e2e.test through each TP, from the control plane's network namespace
#      (it reaches the nodes and the pods there), with KUBE_TEST_REPO_LIST
#      naming the local images; JUnit in OUT/<tp>/. The suite reads the
#      nodes from the server it tests, and a TP has none (they register with
#      the resource partition), so it talks to the TP through nodeproxy
#      (test/conformance/nodeproxy), which answers Node requests from the
#      resource partition, the list of the cluster DNS pods from tp1 (which
#      runs partition-dns for every TP) and passes everything else to the TP;
#   4. OUT/table.md: each spec, passed, failed or skipped in each TP, and
#      for a skip its reason (the suite's own, or why it is not run here).
#
# Environment: CLUSTER_DIR (the cluster's, default /tmp/tpkit-cluster),
# CONFORMANCE_OUT (default CLUSTER_DIR/conformance), TPS (default "tp1
# tp2"), FOCUS (default the DNS and Services specs), E2E_TIMEOUT (per TP,
# default 90m). It exits 1 when a spec failed in a TP.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
src=$(cd "${1:?usage: conformance.sh SRC (the patched Arktos tree, WORK/src)}" && pwd)
dir=${CLUSTER_DIR:-/tmp/tpkit-cluster}
out=${CONFORMANCE_OUT:-$dir/conformance}
tps=${TPS:-tp1 tp2}
focus=${FOCUS:-'\[sig-network\] (DNS|Services) '}

say() { echo "conformance: $*" >&2; }
die() {
	say "$*"
	exit 1
}

[ "$(id -u)" = 0 ] || die "needs root (the cluster's namespaces)"
[ -f "$dir/state" ] || die "no cluster is up ($dir/state): make cluster-up first"
. "$dir/state"

# Specs this cluster cannot run, with the reason the table gives. The
# suite skips most of what it cannot do by itself (a cloud provider, SSH
# to the nodes, IPv6), with its own message; these it would run and wait
# out instead.
declare -A not_here=(
	['LoadBalancer|load balancer']="needs a cloud load balancer: none here (the suite skips these on aws only, and waits up to 20 minutes for one elsewhere)"
	['DNS configMap federations']="kube-dns's federations: their names, <svc>.<ns>.<federation>.svc.<zone>, are the shape of an Arktos tenant's names, so partition-dns refuses the key (docs/conformance.md)"
	['Forward PTR lookup']="its first step resolves 8.8.8.8's PTR record (google-public-dns-a.google.com) through the cluster's default upstream: needs the internet, which this machine does not reach"
)
skip=$(
	IFS='|'
	echo "${!not_here[*]}"
)

"$root/hack/conformance-build.sh" "$src" "$out"
(cd "$root" && go build -o "$out/nodeproxy" ./test/conformance/nodeproxy) || die "could not build nodeproxy"

say "loading the test images into both nodes"
for ns in tpkit-node1 tpkit-node2; do
	holder=$(cat "$dir/$ns/holder.pid")
	for f in "$out"/images/*.tar; do
		nsenter -t "$holder" -m -n -- docker -H "unix://$dir/$ns/docker.sock" load -q -i "$f" >/dev/null ||
			die "docker load $f on $ns failed"
	done
done

cp_holder=$(cat "$dir/tpkit-cp/holder.pid")
server() { sed -n 's/.*server: "\([^"]*\)".*/\1/p' "$1"; }
proxy=""
trap '[ -z "$proxy" ] || kill "$proxy" 2>/dev/null' EXIT
rc=0
for tp in $tps; do
	report=$out/$tp
	rm -rf "$report"
	mkdir -p "$report"
	nsenter -t "$cp_holder" -m -n -- "$out/nodeproxy" --listen 127.0.0.1:0 --tp "$(server "$dir/node-kc/$tp.kubeconfig")" \
		--rp "$(server "$dir/node-kc/rp.kubeconfig")" --dns "$(server "$dir/node-kc/tp1.kubeconfig")" --url-file "$report/nodeproxy.url" >"$report/nodeproxy.log" 2>&1 &
	proxy=$!
	for _ in $(seq 50); do [ -s "$report/nodeproxy.url" ] && break; sleep 0.1; done
	[ -s "$report/nodeproxy.url" ] || die "nodeproxy did not start: $(cat "$report/nodeproxy.log")"
	cat >"$report/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- cluster: {server: "$(cat "$report/nodeproxy.url")"}
  name: $tp
users:
- name: admin
  user: {}
contexts:
- context: {cluster: $tp, user: admin}
  name: $tp
current-context: $tp
EOF
	say "$tp: e2e.test --ginkgo.focus='$focus' (log: $report/e2e.log)"
	start=$SECONDS
	if ! nsenter -t "$cp_holder" -m -n --wd="$report" -- env KUBE_TEST_REPO_LIST="$out/repo-list.yaml" \
		KUBECONFIG="$report/kubeconfig" AWS_EC2_METADATA_DISABLED=true \
		timeout "${E2E_TIMEOUT:-90m}" "$out/e2e.test" --kubeconfig="$report/kubeconfig" \
		--provider=skeleton --kubectl-path="$bin/kubectl" --report-dir="$report" \
		--minStartupPods=0 --allowed-not-ready-nodes=0 --dns-domain=cluster.local \
		--ginkgo.focus="$focus" --ginkgo.skip="$skip" --ginkgo.noColor --ginkgo.trace \
		>"$report/e2e.log" 2>&1; then
		rc=1
	fi
	kill "$proxy" 2>/dev/null
	wait "$proxy" 2>/dev/null || true
	proxy=""
	say "$tp: done in $((SECONDS - start)) s: $(grep -E '^(Ran|FAIL!|SUCCESS!)' "$report/e2e.log" | tr '\n' ' ')"
done

for key in "${!not_here[@]}"; do printf '%s\t%s\n' "$key" "${not_here[$key]}"; done >"$out/not-here.tsv"
python3 - "$out" "$tps" <<'PY'
# The table: JUnit says passed, failed or skipped; the reason of a skip is
# ours (not-here.tsv) or the suite's own, which only its log has.
import glob, os, re, sys
import xml.etree.ElementTree as ET
out, tps = sys.argv[1], sys.argv[2].split()
not_here = [l.rstrip("\n").split("\t", 1) for l in open(os.path.join(out, "not-here.tsv")) if "\t" in l]
norm = lambda s: " ".join(s.split())
def log_skips(path):
    """Spec name -> the reason the suite printed when it skipped it."""
    reasons, lines = {}, open(path, errors="replace").read().split("\n")
    for i, line in enumerate(lines):
        if not line.startswith("S [SKIPPING]"):
            continue
        parts, j = [], i + 1
        while j < len(lines) and lines[j].strip():
            if not lines[j].strip().startswith("/"):
                parts.append(re.sub(r" \[(It|BeforeEach|AfterEach|JustBeforeEach)\]$", "", lines[j].strip()))
            j += 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        if j < len(lines):
            reasons[norm(" ".join(parts))] = lines[j].strip()
    return reasons
def first_message(text):
    for l in (text or "").splitlines():
        l = l.strip()
        if l and not re.match(r"^/\S+:\d+$", l):
            return re.sub(r"^\w{3} \d+ [\d:.]+: ", "", l)[:220]
    return ""
results, order = {}, []
for tp in tps:
    log = os.path.join(out, tp, "e2e.log")
    skips = log_skips(log) if os.path.exists(log) else {}
    for f in sorted(glob.glob(os.path.join(out, tp, "junit_*.xml"))):
        for case in ET.parse(f).getroot().iter("testcase"):
            name = norm(case.get("name"))
            if not re.search(r"\[sig-network\] (DNS|Services) ", name):
                continue
            if name not in results:
                results[name] = {}
                order.append(name)
            fail, skipped = case.find("failure"), case.find("skipped")
            if fail is not None:
                results[name][tp] = ("failed", first_message(fail.get("message")) or first_message(fail.text))
            elif skipped is not None:
                reason = next((why for key, why in not_here if re.search(key, name)), None)
                results[name][tp] = ("skipped", reason or skips.get(name) or first_message(skipped.get("message")) or "skipped by the suite")
            else:
                results[name][tp] = ("passed", "")
counts = {tp: {"passed": 0, "failed": 0, "skipped": 0} for tp in tps}
lines = ["| spec | " + " | ".join(tps) + " | why (skip or failure) |", "| --- |" + " --- |" * (len(tps) + 1)]
for name in sorted(order):
    row, why = [], []
    for tp in tps:
        st, msg = results[name].get(tp, ("not run", ""))
        if st in counts[tp]:
            counts[tp][st] += 1
        row.append(st)
        if msg and msg not in why:
            why.append(msg)
    short = re.sub(r"^\[sig-network\] ", "", name).replace("|", "\\|")
    lines.append("| %s | %s | %s |" % (short, " | ".join(row), "; ".join(w.replace("|", "\\|") for w in why)))
summary = "; ".join("%s: %d passed, %d failed, %d skipped" % (tp, c["passed"], c["failed"], c["skipped"]) for tp, c in counts.items())
with open(os.path.join(out, "table.md"), "w") as f:
    f.write(summary + "\n\n" + "\n".join(lines) + "\n")
print(summary)
print("table: " + os.path.join(out, "table.md"))
PY
exit $rc
