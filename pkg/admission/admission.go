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

package admission

import "context"

// Operation is the kind of request being admitted, spelled as in
// k8s.io/apiserver and admission.k8s.io/v1, so that an API server's own
// operation converts with Operation(op).
type Operation string

// The operations an admission plugin can see.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// UserInfo is the requesting user. Its methods are a subset of
// k8s.io/apiserver's user.Info, upstream's and Arktos's alike, and return
// plain types, so a user.Info value is a UserInfo as it is. Arktos's also
// has GetTenant() string, which UserTenant reads.
type UserInfo interface {
	GetName() string
	GetUID() string
	GetGroups() []string
	GetExtra() map[string][]string
}

// User is a plain UserInfo for servers and tests. It has no GetTenant
// method: its tenant is the extra UserTenantExtraKey.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}

// GetName implements UserInfo.
func (u *User) GetName() string { return u.Name }

// GetUID implements UserInfo.
func (u *User) GetUID() string { return u.UID }

// GetGroups implements UserInfo.
func (u *User) GetGroups() []string { return u.Groups }

// GetExtra implements UserInfo.
func (u *User) GetExtra() map[string][]string { return u.Extra }

// Request is one request to admit, as the plain values tpkit's plugins
// read. Whoever holds the API objects fills it: the adapter
// (pkg/admission/k8s) for fake-tp and the webhook, a few lines of glue in
// an Arktos API server.
type Request struct {
	Operation Operation
	// Group is the API group of the resource ("apps"; "" for the core
	// group), or of the kind when the resource is not known.
	Group string
	// Resource is the plural resource ("daemonsets"); "" when only the kind
	// is known.
	Resource string
	// Subresource is "status", "scale", ...; "" for the object itself.
	Subresource string
	// Kind is the object's kind ("DaemonSet").
	Kind string
	// Tenant is the Arktos tenant of the request (from the path, or from
	// metadata.tenant); "" is the system tenant. Cluster-scoped resources
	// have none.
	Tenant    string
	Namespace string
	// Name is the name the request is about; it may be "" on CREATE.
	Name string
	// ObjectName is metadata.name of the object the request carries: the
	// new object for CREATE, UPDATE and CONNECT, the stored one for DELETE;
	// "" when there is none.
	ObjectName string
	// BeingDeleted reports that the stored object (UPDATE, DELETE) already
	// has a deletionTimestamp: finishing a deletion must not be blocked.
	BeingDeleted bool
	// User is the requesting user; nil when unknown.
	User UserInfo
}

// ErrorName is the name an error about r carries, chosen as Arktos's
// admission.NewForbidden chooses it, so that messages match Arktos's: Name,
// else ObjectName, else "Unknown".
func (r Request) ErrorName() string {
	switch {
	case r.Name != "":
		return r.Name
	case r.ObjectName != "":
		return r.ObjectName
	}
	return "Unknown"
}

// ValidationInterface is implemented by validating plugins. The method
// names follow k8s.io/apiserver's, so an API server adapts a plugin in a
// few lines.
type ValidationInterface interface {
	// Handles reports whether the plugin wants to see requests of op.
	Handles(op Operation) bool
	// Validate admits r (nil) or rejects it, with an *Error when the
	// rejection is a decision (Forbidden, Invalid); any other error means
	// the plugin failed.
	Validate(ctx context.Context, r Request) error
}

// Chain runs plugins in order and returns the first rejection.
type Chain []ValidationInterface

// Validate runs every plugin that handles r's operation.
func (c Chain) Validate(ctx context.Context, r Request) error {
	for _, p := range c {
		if !p.Handles(r.Operation) {
			continue
		}
		if err := p.Validate(ctx, r); err != nil {
			return err
		}
	}
	return nil
}
