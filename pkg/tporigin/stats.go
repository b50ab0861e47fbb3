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
	"sync"
	"time"
)

// Stats are the tracker's counters and gauges as plain values. The core
// imports no metrics library; the program that runs the tracker publishes
// them (the patched Arktos kubelet, as the tpkit_tporigin_* metrics).
type Stats struct {
	// Entries are the known origins per TP and kind, for every TP the
	// tracker has seen (zero counts included), in flag order, then by name.
	Entries []EntryCount
	// TenantsInConflict is the number of regular tenants currently seen in
	// more than one TP (or in another than their static one).
	TenantsInConflict int
	// TenantConflicts counts the times a tenant went into conflict.
	TenantConflicts uint64
	// UIDConflicts counts, by the reporting TP, UIDs reported by a TP other
	// than their recorded origin (once per UID and TP).
	UIDConflicts map[string]uint64
	// Pruned counts, by TP, the origins Prune removed and those Open
	// dropped because their TP is not configured.
	Pruned map[string]uint64
	// Pending is the number of UIDs whose change is not yet in the file.
	Pending int
	// Commits and CommitErrors count the group commits to the file that
	// succeeded and that failed (their changes stay queued and are retried).
	Commits, CommitErrors uint64
	// CommitSeconds is the time of each successful commit, fsync included.
	CommitSeconds Histogram
	// CommitBatchSize is the number of changes in each successful commit.
	CommitBatchSize Histogram
}

// EntryCount is the number of origins of one kind from one TP.
type EntryCount struct {
	Partition string
	Kind      Kind
	Count     int
}

// Histogram is a distribution in fixed buckets, kept the way Prometheus
// exposes one: Counts[i] is the number of observations at most Upper[i]
// (cumulative), Count the number of all of them and Sum their total.
type Histogram struct {
	Upper  []float64
	Counts []uint64
	Count  uint64
	Sum    float64
}

func newHistogram(upper []float64) Histogram {
	return Histogram{Upper: upper, Counts: make([]uint64, len(upper))}
}

func (h *Histogram) observe(v float64) {
	for i, u := range h.Upper {
		if v <= u {
			h.Counts[i]++
		}
	}
	h.Count++
	h.Sum += v
}

func (h Histogram) clone() Histogram {
	h.Upper = append([]float64(nil), h.Upper...)
	h.Counts = append([]uint64(nil), h.Counts...)
	return h
}

// exponentialBuckets are n upper bounds from start, each factor times the
// one before.
func exponentialBuckets(start, factor float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = start
		start *= factor
	}
	return out
}

// counters are the event counts of one Tracker; the gauges are computed
// from its state when Stats is called.
type counters struct {
	mu              sync.Mutex
	tenantConflicts uint64
	uidConflicts    map[string]uint64
	prunedBy        map[string]uint64
	commits         uint64
	commitErrors    uint64
	commitSeconds   Histogram
	batchSize       Histogram
}

func (c *counters) init() {
	c.uidConflicts = make(map[string]uint64)
	c.prunedBy = make(map[string]uint64)
	// 0.5 ms to 4 s, and 1 to 256k changes: a node's fsync and batch range.
	c.commitSeconds = newHistogram(exponentialBuckets(0.0005, 2, 14))
	c.batchSize = newHistogram(exponentialBuckets(1, 4, 10))
}

func (c *counters) tenantConflict() {
	c.mu.Lock()
	c.tenantConflicts++
	c.mu.Unlock()
}

func (c *counters) uidConflict(partition string) {
	c.mu.Lock()
	c.uidConflicts[partition]++
	c.mu.Unlock()
}

func (c *counters) pruned(partition string, n int) {
	c.mu.Lock()
	c.prunedBy[partition] += uint64(n)
	c.mu.Unlock()
}

func (c *counters) commit(d time.Duration, n int, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		c.commitErrors++
		return
	}
	c.commits++
	c.commitSeconds.observe(d.Seconds())
	c.batchSize.observe(float64(n))
}

// Stats returns a snapshot of the tracker's counters and gauges.
func (t *Tracker) Stats() Stats {
	var s Stats
	t.mu.RLock()
	ids := make([]uint16, len(t.counts))
	for i := range ids {
		ids[i] = uint16(i)
	}
	t.sortTPs(ids)
	for _, tp := range ids {
		for k := KindPod; k < numKinds; k++ {
			s.Entries = append(s.Entries, EntryCount{Partition: t.tpNames[tp], Kind: k, Count: t.counts[tp][k]})
		}
	}
	s.TenantsInConflict = t.tenantsInConflict
	t.mu.RUnlock()
	s.Pending = t.Pending()

	c := &t.stats
	c.mu.Lock()
	defer c.mu.Unlock()
	s.TenantConflicts = c.tenantConflicts
	s.UIDConflicts = copyCounts(c.uidConflicts)
	s.Pruned = copyCounts(c.prunedBy)
	s.Commits, s.CommitErrors = c.commits, c.commitErrors
	s.CommitSeconds = c.commitSeconds.clone()
	s.CommitBatchSize = c.batchSize.clone()
	return s
}

func copyCounts(m map[string]uint64) map[string]uint64 {
	out := make(map[string]uint64, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
