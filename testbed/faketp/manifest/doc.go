// Package manifest reads Kubernetes manifests for fake-tp's seeding: files of
// one or more YAML documents ("---" separated) or JSON values, where a
// document may also be a List (kind ending in "List" with items).
//
// Invariants: Decode never panics, whatever its input (it is fuzzed); every
// object it returns is a JSON object with string apiVersion and kind and a
// metadata object; numbers stay exact (json.Number), so int64 fields survive.
package manifest
