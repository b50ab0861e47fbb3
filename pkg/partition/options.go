package partition

import (
	"flag"
	"time"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/informer"
)

// Options configure a Set. AddFlags binds them to Kubernetes-style flags.
type Options struct {
	// KubeconfigPaths lists one kubeconfig per TP, in order (Arktos's
	// --tenant-server-kubeconfig).
	KubeconfigPaths []string
	// Names overrides the TP names; by default the TPs are named after their
	// kubeconfigs' current contexts when those are all set and different,
	// else after the files' names (tenancy.PartitionNames).
	Names []string
	// Resync is the consumers' resync period; zero disables resync.
	Resync time.Duration
	// SyncTimeout bounds how long WaitForSync waits for slow or unreachable
	// TPs before the program serves what it has.
	SyncTimeout time.Duration
	// QPS and Burst set each TP client's rate limit; zero picks 50 and 100.
	QPS   float32
	Burst int
	// Endpoints says where service endpoints are read from: core/v1
	// Endpoints (Arktos serves nothing else), discovery.k8s.io/v1
	// EndpointSlices, or by each TP's discovery (the default).
	Endpoints informer.EndpointsMode
}

// DefaultSyncTimeout is the bounded wait for TPs at start.
const DefaultSyncTimeout = 30 * time.Second

// AddFlags registers the TP-set flags on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.Var((*cliflag.List)(&o.KubeconfigPaths), "tenant-server-kubeconfig",
		"Comma-separated kubeconfig files, one per tenant partition, in order.")
	fs.Var((*cliflag.List)(&o.Names), "tenant-partition-names",
		"Comma-separated names for the tenant partitions, in the order of --tenant-server-kubeconfig. Default: the kubeconfigs' current contexts when they are all set and different, else the files' names without extension.")
	fs.DurationVar(&o.Resync, "partition-resync", o.Resync,
		"Resync period of the per-partition list/watches; 0 disables resync.")
	if o.SyncTimeout == 0 {
		o.SyncTimeout = DefaultSyncTimeout
	}
	fs.DurationVar(&o.SyncTimeout, "partition-sync-timeout", o.SyncTimeout,
		"How long to wait at start for every tenant partition to sync before serving what is there; unsynced partitions keep retrying.")
	if o.Endpoints == "" {
		o.Endpoints = informer.EndpointsAuto
	}
	fs.Func("partition-endpoints", "Where service endpoints are read from: auto (discovery.k8s.io/v1 EndpointSlices when a tenant partition serves them, else core/v1 Endpoints, as Arktos has), endpoints or endpointslices. Default: auto.", func(v string) error {
		m, err := informer.ParseEndpointsMode(v)
		o.Endpoints = m
		return err
	})
}
