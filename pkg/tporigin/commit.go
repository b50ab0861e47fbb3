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
	"context"
	"sync"
	"time"
)

// queue holds the changes not yet in the file. Changes to one UID coalesce:
// the file only needs the last state. seq numbers say what is durable:
// everything enqueued up to durable is in the file and synced.
type queue struct {
	mu         sync.Mutex
	pending    map[string][]byte // nil value: delete
	enq        uint64
	durable    uint64
	committing bool
	done       chan struct{} // closed and replaced after every commit attempt
	kick       chan struct{} // wakes Run; capacity 1
}

func (q *queue) init() {
	q.pending = make(map[string][]byte)
	q.done = make(chan struct{})
	q.kick = make(chan struct{}, 1)
}

func (q *queue) enqueue(uid string, v []byte) {
	q.mu.Lock()
	q.pending[uid] = v
	q.enq++
	q.mu.Unlock()
	select {
	case q.kick <- struct{}{}:
	default:
	}
}

// Flush returns once every change made before the call is in the file and
// synced to disk (one bbolt commit, one fsync, for whatever is pending from
// all callers: group commit), or with the commit's error, or ctx's. Without a
// file it returns nil at once.
func (t *Tracker) Flush(ctx context.Context) error {
	if t.db == nil {
		return nil
	}
	q := &t.q
	q.mu.Lock()
	target := q.enq
	for q.durable < target {
		if !q.committing {
			if err := t.commitLocked(); err != nil && q.durable < target {
				q.mu.Unlock()
				return err
			}
			continue
		}
		// Another caller is committing; its batch may not hold our
		// changes, so wait for it and look again.
		ch := q.done
		q.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		}
		q.mu.Lock()
	}
	q.mu.Unlock()
	return nil
}

// commitLocked writes everything pending in one transaction. It is called
// with q.mu held and returns with it held; the lock is released during the
// write so that changes keep queueing for the next batch.
func (t *Tracker) commitLocked() error {
	q := &t.q
	batch, upto := q.pending, q.enq
	q.pending = make(map[string][]byte, len(batch))
	q.committing = true
	q.mu.Unlock()

	var err error
	if len(batch) > 0 {
		start := time.Now()
		err = writeBatch(t.db, batch)
		t.stats.commit(time.Since(start), len(batch), err)
	}

	q.mu.Lock()
	q.committing = false
	if err != nil {
		// Keep the batch for the next attempt, except where a newer
		// change to the same UID is already queued.
		for k, v := range batch {
			if _, newer := q.pending[k]; !newer {
				q.pending[k] = v
			}
		}
	} else {
		q.durable = upto
	}
	close(q.done)
	q.done = make(chan struct{})
	return err
}

// Record is Observe followed by Flush: it returns once the origin is
// durable (or was already known), so a caller may act on it knowing a
// restart will not lose it.
func (t *Tracker) Record(ctx context.Context, o Observation) (Result, error) {
	r, err := t.Observe(o)
	if err != nil {
		return r, err
	}
	return r, t.Flush(ctx)
}

// Pending is the number of UIDs whose change is not yet in the file.
func (t *Tracker) Pending() int {
	t.q.mu.Lock()
	defer t.q.mu.Unlock()
	return len(t.q.pending)
}

// Run commits queued changes in batches until ctx ends: after a change it
// waits Options.BatchDelay for more, then commits them together. A failed
// commit is logged and retried after a second. When ctx ends Run commits what
// is left and returns. Without Run, changes reach the file at Flush, Record
// or Close.
func (t *Tracker) Run(ctx context.Context) {
	if t.db == nil {
		<-ctx.Done()
		return
	}
	for {
		select {
		case <-ctx.Done():
			if err := t.Flush(context.Background()); err != nil {
				t.log.Errorf("Final commit of TP origins to %s failed: %v", t.opts.Path, err)
			}
			return
		case <-t.q.kick:
		}
		if t.opts.BatchDelay > 0 {
			timer := time.NewTimer(t.opts.BatchDelay)
			select {
			case <-timer.C:
			case <-ctx.Done():
				timer.Stop()
			}
		}
		if err := t.Flush(context.Background()); err != nil {
			t.log.Errorf("Committing TP origins to %s failed (%d pending); retrying: %v", t.opts.Path, t.Pending(), err)
			select {
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			select {
			case t.q.kick <- struct{}{}:
			default:
			}
		}
	}
}

// Close commits what is pending and closes the file. Calls after Close
// return ErrClosed; OriginOf keeps answering from memory.
func (t *Tracker) Close() error {
	t.writeMu.Lock()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		t.writeMu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	t.writeMu.Unlock()
	if t.db == nil {
		return nil
	}
	err := t.Flush(context.Background())
	if cerr := t.db.Close(); err == nil {
		err = cerr
	}
	return err
}
