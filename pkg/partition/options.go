package partition

import (
	"flag"
	"time"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
)

// Options configure a Set. AddFlags binds them to Kubernetes-style flags.
type Options struct {
	// KubeconfigPaths lists one kubeconfig per TP, in order (Arktos's
	// --tenant-server-kubeconfig).
	KubeconfigPaths []string
	// Names overrides the TP names; by default a TP is named after its
	// kubeconfig's current context, else after the file name.
	Names []string
	// Resync is the informer factories' resync period; zero disables resync.
	Resync time.Duration
	// SyncTimeout bounds how long WaitForSync waits for slow or unreachable
	// TPs before the program serves what it has.
	SyncTimeout time.Duration
	// QPS and Burst set each TP client's rate limit; zero picks 50 and 100.
	QPS   float32
	Burst int
	// WatchList lets client-go's reflectors use streaming watch-list
	// (sendInitialEvents) against the TPs. Off by default: Arktos API servers
	// (Kubernetes 1.18) ignore the request, so a reflector using it never
	// syncs. Reflectors then list and watch, as they did before client-go 1.32.
	WatchList bool
}

// DefaultSyncTimeout is the bounded wait for TPs at start.
const DefaultSyncTimeout = 30 * time.Second

// AddFlags registers the TP-set flags on fs.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	fs.Var((*cliflag.List)(&o.KubeconfigPaths), "tenant-server-kubeconfig",
		"Comma-separated kubeconfig files, one per tenant partition, in order.")
	fs.Var((*cliflag.List)(&o.Names), "tenant-partition-names",
		"Comma-separated names for the tenant partitions, in the order of --tenant-server-kubeconfig. Default: each kubeconfig's current context, else its file name.")
	fs.DurationVar(&o.Resync, "partition-resync", o.Resync,
		"Resync period of the per-partition informers; 0 disables resync.")
	if o.SyncTimeout == 0 {
		o.SyncTimeout = DefaultSyncTimeout
	}
	fs.DurationVar(&o.SyncTimeout, "partition-sync-timeout", o.SyncTimeout,
		"How long to wait at start for every tenant partition to sync before serving what is there; unsynced partitions keep retrying.")
	fs.BoolVar(&o.WatchList, "partition-watch-list", o.WatchList,
		"Use client-go's streaming watch-list against the tenant partitions. Leave off for Arktos API servers, which ignore it, so informers would never sync.")
}
