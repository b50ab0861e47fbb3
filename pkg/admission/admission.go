package admission

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Operation is the kind of request being admitted, spelled as in
// k8s.io/apiserver and admission.k8s.io/v1.
type Operation string

// The operations an admission plugin can see.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// UserInfo is the requesting user. Its method set equals
// k8s.io/apiserver/pkg/authentication/user.Info, so upstream values satisfy it.
type UserInfo interface {
	GetName() string
	GetUID() string
	GetGroups() []string
	GetExtra() map[string][]string
}

// Attributes describes one request. Objects may be typed or
// *unstructured.Unstructured; Tenant is the Arktos tenant of the request
// (from the path, or from metadata.tenant), SystemTenant-equivalent when "".
type Attributes interface {
	GetOperation() Operation
	GetKind() schema.GroupVersionKind
	GetResource() schema.GroupVersionResource
	GetSubresource() string
	GetTenant() string
	GetNamespace() string
	GetName() string
	// GetObject is the new object; nil for DELETE.
	GetObject() runtime.Object
	// GetOldObject is the stored object for UPDATE and DELETE, when known.
	GetOldObject() runtime.Object
	GetUserInfo() UserInfo
}

// ValidationInterface is implemented by validating plugins. Validate returns
// nil to admit, or an error (usually a *k8s.io/apimachinery/pkg/api/errors.StatusError
// such as Forbidden or Invalid) that the server returns to the client as is.
type ValidationInterface interface {
	// Handles reports whether the plugin wants to see requests of op.
	Handles(op Operation) bool
	// Validate admits or rejects a; it must not modify a's objects.
	Validate(ctx context.Context, a Attributes) error
}

// Record is a plain Attributes implementation for servers and tests.
type Record struct {
	Operation   Operation
	Kind        schema.GroupVersionKind
	Resource    schema.GroupVersionResource
	Subresource string
	Tenant      string
	Namespace   string
	Name        string
	Object      runtime.Object
	OldObject   runtime.Object
	User        UserInfo
}

var _ Attributes = (*Record)(nil)

// GetOperation implements Attributes.
func (r *Record) GetOperation() Operation { return r.Operation }

// GetKind implements Attributes.
func (r *Record) GetKind() schema.GroupVersionKind { return r.Kind }

// GetResource implements Attributes.
func (r *Record) GetResource() schema.GroupVersionResource { return r.Resource }

// GetSubresource implements Attributes.
func (r *Record) GetSubresource() string { return r.Subresource }

// GetTenant implements Attributes.
func (r *Record) GetTenant() string { return r.Tenant }

// GetNamespace implements Attributes.
func (r *Record) GetNamespace() string { return r.Namespace }

// GetName implements Attributes.
func (r *Record) GetName() string { return r.Name }

// GetObject implements Attributes.
func (r *Record) GetObject() runtime.Object { return r.Object }

// GetOldObject implements Attributes.
func (r *Record) GetOldObject() runtime.Object { return r.OldObject }

// GetUserInfo implements Attributes.
func (r *Record) GetUserInfo() UserInfo { return r.User }

// User is a plain UserInfo.
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

// Chain runs plugins in order and returns the first rejection.
type Chain []ValidationInterface

// Validate runs every plugin that handles a's operation.
func (c Chain) Validate(ctx context.Context, a Attributes) error {
	for _, p := range c {
		if !p.Handles(a.GetOperation()) {
			continue
		}
		if err := p.Validate(ctx, a); err != nil {
			return err
		}
	}
	return nil
}
