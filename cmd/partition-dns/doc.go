// Command partition-dns is cluster DNS across all tenant partitions of an
// Arktos scale-out cluster:
//
//	partition-dns --tenant-server-kubeconfig tp1.kubeconfig,tp2.kubeconfig \
//	    --listen :53 --zone cluster.local --zone in-addr.arpa --tenant-isolation
//
// It answers <svc>.<ns>.<tenant>.svc.<zone> for every tenant and the upstream
// forms for the system tenant, as the CoreDNS kubernetes plugin would, and
// forwards other names upstream through a cache. docs/dns.md has the name
// grammar and the rules; pkg/dns/... has the parts. Metrics are on
// --metrics-listen, /healthz, /readyz and /readyz/partitions on
// --health-listen. SIGTERM stops it gracefully.
package main
