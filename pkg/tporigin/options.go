/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package tporigin

import (
	"fmt"
	"time"

	"github.com/tpkit-dev/tpkit/pkg/corelog"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// Options configure a Tracker. They are a plain struct: an Arktos kubelet
// fills them from its own flags.
type Options struct {
	// Path is the database file, one per node (the patched kubelet's
	// --tporigin-file). Empty keeps
	// origins in memory only: a restart forgets them.
	Path string
	// Rebuild moves an unusable file aside and starts empty instead of
	// failing.
	Rebuild bool
	// Partitions are the TP names in flag order. A regular tenant seen in
	// several TPs is answered with the first of them in this order, and a
	// TP's position here is its client index for ClientChooser (Arktos's
	// index into the kubelet's KubeTPClients).
	Partitions []string
	// StaticTenants maps regular tenants to their TP; it overrides what is
	// observed.
	StaticTenants map[string]string
	// BatchDelay is how long Run waits after a change for more before
	// committing. Zero commits at once.
	BatchDelay time.Duration
	// LockTimeout bounds the wait for the file lock held by another process.
	LockTimeout time.Duration
	// Logger receives the tracker's log lines: loads, compactions and
	// prunes (info), conflicts and dropped partitions (warning), failed
	// commits and rebuilds (error). Nil discards them.
	Logger corelog.Logger
}

// DefaultLockTimeout is Options.LockTimeout's default.
const DefaultLockTimeout = 10 * time.Second

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
