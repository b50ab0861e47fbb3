// Command partition-dns is cluster DNS across all tenant partitions of an
// Arktos scale-out cluster:
//
//	partition-dns --tenant-server-kubeconfig tp1.kubeconfig,tp2.kubeconfig \
//	    --listen :53 --tenant-isolation
//
// It answers <svc>.<ns>.<tenant>.svc.<zone> for every tenant and the upstream
// forms for the system tenant, as the CoreDNS kubernetes plugin would, and
// forwards other names upstream through a cache. docs/dns.md has the name
// grammar and the rules; pkg/dns/... has the parts. Its defaults are
// kubeadm's CoreDNS's: zones cluster.local, in-addr.arpa and ip6.arpa,
// metrics on :9153, /health on :8080 and /ready on :8181, so a CoreDNS
// manifest's probes work unchanged; /healthz, /readyz and
// /readyz/partitions are on --health-listen too. SIGTERM stops it
// gracefully. --help and --version are a Kubernetes component's.
//
// The same binary runs the NodeLocal DNS cache and its HA switch
// (pkg/nodelocal, deploy/nodelocal):
//
//	partition-dns node-cache --local-ip 169.254.20.10,10.0.0.10 --upstream-svc-ip 10.0.0.11
//	partition-dns node-cache-watch --local-ip 169.254.20.10,10.0.0.10
//
// A bad command line (any flag value that does not hold, checked at start)
// exits 2, --help and --version exit 0, any other failure exits 1.
package main
