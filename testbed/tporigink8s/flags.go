package tporigink8s

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/tpkit-dev/tpkit/internal/cliflag"
	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

// AddFlags registers the tracker's flags on fs, bound to o. Partitions come
// from the partition set, not from a flag. A zero BatchDelay becomes
// tporigin.DefaultBatchDelay, the flag's default, and Rebuild becomes true:
// the file is a cache of what the TPs hold, so a node component with a
// damaged file keeps it aside and starts (--tporigin-rebuild=false refuses
// to start instead).
func AddFlags(fs *flag.FlagSet, o *tporigin.Options) {
	if o.BatchDelay == 0 {
		o.BatchDelay = tporigin.DefaultBatchDelay
	}
	o.Rebuild = true
	fs.StringVar(&o.Path, "tporigin-db", o.Path,
		"bbolt file keeping each pod's and service's tenant partition across restarts, one per node. Empty keeps them in memory only.")
	fs.BoolVar(&o.Rebuild, "tporigin-rebuild", o.Rebuild,
		"If the --tporigin-db file is damaged or not a tporigin file, move it aside (logged) and rebuild it from the tenant partitions; false refuses to start instead.")
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
