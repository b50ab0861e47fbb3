package systemdaemonset

import (
	"context"
	"errors"
	"io"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission"

	tpadmission "github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/admission/daemonset"
)

// PluginName indicates name of admission plugin.
const PluginName = daemonset.ArktosPluginName // "SystemDaemonSet"

// systemDaemonSet permits DaemonSets in the system tenant only, and
// optionally lets only cluster admins manage them (tpkit's pkg/admission/daemonset).
type systemDaemonSet struct {
	*admission.Handler
	core *daemonset.Plugin
}

var _ admission.ValidationInterface = &systemDaemonSet{}

// Validate asks tpkit's core and refuses with Arktos's own NewForbidden,
// so the 403's name and text are Arktos's.
func (s *systemDaemonSet) Validate(a admission.Attributes, _ admission.ObjectInterfaces) error {
	err := s.core.Validate(context.TODO(), request(a))
	if e, ok := tpadmission.AsError(err); ok {
		return admission.NewForbidden(a, errors.New(e.Message))
	}
	return err
}

// request is the core's plain request. user.Info is a tpadmission.UserInfo
// as it is; the admin rule reads its GetTenant.
func request(a admission.Attributes) tpadmission.Request {
	r := tpadmission.Request{
		Operation:   tpadmission.Operation(a.GetOperation()),
		Group:       a.GetResource().Group,
		Resource:    a.GetResource().Resource,
		Subresource: a.GetSubresource(),
		Kind:        a.GetKind().Kind,
		Tenant:      a.GetTenant(),
		Namespace:   a.GetNamespace(),
		Name:        a.GetName(),
		User:        a.GetUserInfo(),
	}
	carried := a.GetObject()
	if a.GetOperation() == admission.Delete {
		carried = a.GetOldObject()
	}
	if m, err := meta.Accessor(carried); err == nil {
		r.ObjectName = m.GetName()
	}
	if m, err := meta.Accessor(a.GetOldObject()); err == nil {
		r.BeingDeleted = m.GetDeletionTimestamp() != nil
	}
	return r
}

// New creates the plugin with Arktos's rule only.
func New() admission.Interface {
	p, _ := NewFromConfig(nil)
	return p
}

// NewFromConfig creates the plugin from its admission configuration, e.g.
// {"adminOnly": true, "adminGroups": ["system:masters"]}; nil is Arktos's rule only.
func NewFromConfig(config io.Reader) (admission.Interface, error) {
	c, err := daemonset.ParseConfig(config)
	if err != nil {
		return nil, err
	}
	return &systemDaemonSet{
		Handler: admission.NewHandler(admission.Create, admission.Update, admission.Delete),
		core:    daemonset.New(c),
	}, nil
}

// Register registers a plugin
func Register(plugins *admission.Plugins) {
	plugins.Register(PluginName, NewFromConfig)
}
