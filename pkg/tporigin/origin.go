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
	"errors"
	"fmt"
)

// Kind is the kind of object whose origin is tracked.
type Kind uint8

// The tracked kinds. The values are stored in the database file; never
// renumber them.
const (
	KindPod           Kind = 1
	KindService       Kind = 2
	KindEndpointSlice Kind = 3
	KindEndpoints     Kind = 4

	numKinds = 5 // one past the largest kind
)

func (k Kind) valid() bool { return k >= KindPod && k < numKinds }

// String returns the kind's resource name, as used in metric labels.
func (k Kind) String() string {
	switch k {
	case KindPod:
		return "pods"
	case KindService:
		return "services"
	case KindEndpointSlice:
		return "endpointslices"
	case KindEndpoints:
		return "endpoints"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Observation is what a feed reports about one object: its UID, kind, the
// TP it came from, and its tenant ("" or "system" for the system tenant).
// UIDs are plain strings; an Arktos caller converts its types.UID with
// string(uid).
type Observation struct {
	UID       string
	Kind      Kind
	Partition string
	Tenant    string
}

// Origin is what the tracker knows about one UID.
type Origin struct {
	Partition string
	Kind      Kind
	// Tenant is the object's tenant; tenancy.SystemTenant for the system
	// tenant.
	Tenant string
}

// Result says what Observe did.
type Result uint8

const (
	// Recorded: the UID was new and now has this origin.
	Recorded Result = iota + 1
	// Known: the UID already had this origin; nothing changed.
	Known
	// Conflict: the UID already had another origin, which is kept. The
	// conflict is counted and logged once per UID and TP.
	Conflict
)

func (r Result) String() string {
	switch r {
	case Recorded:
		return "Recorded"
	case Known:
		return "Known"
	case Conflict:
		return "Conflict"
	}
	return fmt.Sprintf("Result(%d)", uint8(r))
}

// Op is the type of a Change.
type Op uint8

const (
	// OriginAdded: UID now has origin Partition.
	OriginAdded Op = iota + 1
	// OriginRemoved: UID, whose origin was Partition, is forgotten.
	OriginRemoved
	// TenantPartitionChanged: PartitionOfTenant(Tenant) now answers
	// Partition ("" when the tenant is no longer known).
	TenantPartitionChanged
)

// Change is one change, as delivered to subscribers.
type Change struct {
	Op        Op
	UID       string
	Kind      Kind
	Partition string
	Tenant    string
}

// ErrClosed is returned by calls on a closed Tracker.
var ErrClosed = errors.New("tporigin: tracker is closed")

// entry is the in-memory form of one origin: 8 bytes, names interned.
type entry struct {
	tp     uint16
	kind   Kind
	tenant uint32 // 0 is the system tenant
}

// tenantState is what is known about where a regular tenant lives.
type tenantState struct {
	counts   map[uint16]int // live origins per TP
	answer   string         // PartitionOfTenant's answer; "" if none
	conflict bool
}
