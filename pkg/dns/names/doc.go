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

// Package names is the grammar of partition-dns: it turns a query name,
// relative to one of the served zones, into the readings it can have. It does
// no lookups; the server asks the index about each reading in order and the
// first reading whose name exists wins.
//
// The tenant-aware form <svc>.<ns>.<tenant>.svc.<zone> and the upstream
// (legacy, system tenant) forms share label counts: "a.b.c.svc" is both the
// service a in namespace b of tenant c and the endpoint a of service b in the
// system namespace c. Parse returns both readings in a fixed order, documented
// in docs/dns.md.
//
// Invariants:
//   - Parse never allocates and never panics, whatever the input.
//   - Labels handed to Parse are lowercase; every byte slice in a Request
//     aliases the caller's labels.
package names
