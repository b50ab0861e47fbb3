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

package tenancy

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key identifies an object across tenant partitions. Tenant, namespace and name
// alone are not unique in scale-out: the system tenant exists in every TP, so
// system/kube-system/kube-dns can exist in TP1 and TP2. Key adds the TP.
//
// Namespace is empty for objects that are not namespaced (a namespace itself).
type Key struct {
	Partition string
	Tenant    string
	Namespace string
	Name      string
}

// String renders Arktos's form "<tenant>_<tp>/<namespace>/<name>", or
// "<tenant>_<tp>/<name>" when Namespace is empty.
func (k Key) String() string {
	var b strings.Builder
	b.Grow(len(k.Tenant) + len(k.Partition) + len(k.Namespace) + len(k.Name) + 3)
	b.WriteString(k.Tenant)
	b.WriteByte('_')
	b.WriteString(k.Partition)
	b.WriteByte('/')
	if k.Namespace != "" {
		b.WriteString(k.Namespace)
		b.WriteByte('/')
	}
	b.WriteString(k.Name)
	return b.String()
}

// Validate reports the first part of k that cannot appear in a key string.
func (k Key) Validate() error {
	if err := ValidateTenantName(k.Tenant); err != nil {
		return fmt.Errorf("key %q: %w", k.String(), err)
	}
	if err := ValidatePartitionName(k.Partition); err != nil {
		return fmt.Errorf("key %q: %w", k.String(), err)
	}
	if strings.Contains(k.Namespace, "/") {
		return fmt.Errorf("key %q: namespace must not contain '/'", k.String())
	}
	if k.Name == "" || strings.Contains(k.Name, "/") {
		return fmt.Errorf("key %q: name must be non-empty and must not contain '/'", k.String())
	}
	return nil
}

// ValidatePartitionName reports why p cannot name a tenant partition. A TP name
// is free-form (it often comes from a kubeconfig context such as
// "admin@tp1") but must be non-empty and free of '/' so that keys parse, and
// printable UTF-8, so that logs, metric labels and stored records carry it
// unchanged.
func ValidatePartitionName(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("partition name must not be empty")
	case strings.ContainsAny(p, "/ \t\r\n"):
		return fmt.Errorf("partition name %q must not contain '/' or whitespace", p)
	case !utf8.ValidString(p):
		return fmt.Errorf("partition name %q is not valid UTF-8", p)
	case strings.IndexFunc(p, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0:
		return fmt.Errorf("partition name %q must be printable", p)
	}
	return nil
}
