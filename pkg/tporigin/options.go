package tporigin

import (
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Options configure a Tracker. AddFlags binds them to Kubernetes-style flags.
type Options struct {
	// Path is the database file, one per node (--tporigin-db). Empty keeps
	// origins in memory only: a restart forgets them.
	Path string
	// Rebuild moves an unusable file aside and starts empty instead of
	// failing (--tporigin-rebuild).
	Rebuild bool
	// Partitions are the TP names in flag order. A regular tenant seen in
	// several TPs is answered with the first of them in this order.
	Partitions []string
	// StaticTenants maps regular tenants to their TP; it overrides what is
	// observed (--tporigin-static-tenants).
	StaticTenants map[string]string
	// BatchDelay is how long Run waits after a change for more before
	// committing (--tporigin-batch-delay). Zero commits at once.
	BatchDelay time.Duration
	// LockTimeout bounds the wait for the file lock held by another process.
	LockTimeout time.Duration
}

// Defaults.
const (
	DefaultBatchDelay  = 5 * time.Millisecond
	DefaultLockTimeout = 10 * time.Second
)

func (o *Options) setDefaults() {
	if o.LockTimeout == 0 {
		o.LockTimeout = DefaultLockTimeout
	}
}

// Validate reports the first bad option.
func (o *Options) Validate() error {
	seen := map[string]bool{}
	for _, p := range o.Partitions {
		if err := tenancy.ValidatePartitionName(p); err != nil {
			return fmt.Errorf("tporigin: %w", err)
		}
		if seen[p] {
			return fmt.Errorf("tporigin: partition %q is listed twice", p)
		}
		seen[p] = true
	}
	for tenant, tp := range o.StaticTenants {
		if tenancy.IsSystem(tenant) {
			return fmt.Errorf("tporigin: the system tenant exists in every partition and cannot be mapped to one")
		}
		if err := tenancy.ValidateTenantName(tenant); err != nil {
			return fmt.Errorf("tporigin: static tenant map: %w", err)
		}
		if err := tenancy.ValidatePartitionName(tp); err != nil {
			return fmt.Errorf("tporigin: static tenant map, tenant %q: %w", tenant, err)
		}
	}
	if o.BatchDelay < 0 {
		return fmt.Errorf("tporigin: batch delay %v is negative", o.BatchDelay)
	}
	return nil
}

// AddFlags registers the tracker's flags on fs. Partitions come from the
// partition set, not from a flag.
func (o *Options) AddFlags(fs *flag.FlagSet) {
	if o.BatchDelay == 0 {
		o.BatchDelay = DefaultBatchDelay
	}
	fs.StringVar(&o.Path, "tporigin-db", o.Path,
		"bbolt file keeping each pod's and service's tenant partition across restarts, one per node. Empty keeps them in memory only.")
	fs.BoolVar(&o.Rebuild, "tporigin-rebuild", o.Rebuild,
		"If the --tporigin-db file is damaged or not a tporigin file, move it aside and rebuild it from the tenant partitions instead of failing.")
	fs.Var((*tenantMap)(&o.StaticTenants), "tporigin-static-tenants",
		"Comma-separated tenant=partition pairs that fix a regular tenant's partition, overriding what is observed.")
	fs.DurationVar(&o.BatchDelay, "tporigin-batch-delay", o.BatchDelay,
		"How long to gather origin changes into one durable commit.")
}

// tenantMap is a flag.Value for "t1=tp1,t2=tp2".
type tenantMap map[string]string

func (m *tenantMap) String() string {
	if m == nil || *m == nil {
		return ""
	}
	pairs := make([]string, 0, len(*m))
	for k, v := range *m {
		pairs = append(pairs, k+"="+v)
	}
	sort.Strings(pairs)
	return strings.Join(pairs, ",")
}

func (m *tenantMap) Set(s string) error {
	out := map[string]string{}
	for _, pair := range cliflag.SplitList(s) {
		k, v, ok := strings.Cut(pair, "=")
		if !ok || k == "" || v == "" {
			return fmt.Errorf("%q is not tenant=partition", pair)
		}
		if prev, dup := out[k]; dup && prev != v {
			return fmt.Errorf("tenant %q is mapped to both %q and %q", k, prev, v)
		}
		out[k] = v
	}
	*m = out
	return nil
}
