package daemonset_test

// This file shows the DaemonSet core as a drop-in for Arktos's own
// SystemDaemonSet admission plugin. Its first part is a hand-written
// stand-in of the Arktos API server types the glue touches (shapes taken
// from Arktos 6685f14's k8s.io/apiserver and k8s.io/apimachinery forks; not
// Arktos code). Its second part is the glue itself: the file an Arktos tree
// puts at plugin/pkg/admission/systemdaemonset/admission.go in place of its
// own, with each ark* name standing for the Arktos identifier named in its
// comment (arktos/patches/0001-* puts the file in Arktos's tree, and make
// arktos-patch runs Arktos's own tests of it there). The tests
// run the glue through the stand-in registry, as kube-apiserver would.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	tpadmission "github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/admission/daemonset"
)

// ---- Stand-ins for Arktos's API server types ----

// arkOperation stands for k8s.io/apiserver/pkg/admission.Operation.
type arkOperation string

const (
	arkCreate arkOperation = "CREATE"
	arkUpdate arkOperation = "UPDATE"
	arkDelete arkOperation = "DELETE"
)

// arkGroupVersionResource stands for schema.GroupVersionResource, with its
// GroupResource().String() ("daemonsets.apps").
type arkGroupVersionResource struct{ Group, Version, Resource string }

func (r arkGroupVersionResource) groupResource() string {
	if r.Group == "" {
		return r.Resource
	}
	return r.Resource + "." + r.Group
}

// arkGroupVersionKind stands for schema.GroupVersionKind.
type arkGroupVersionKind struct{ Group, Version, Kind string }

// arkUserInfo stands for user.Info in Arktos's
// staging/src/k8s.io/apiserver/pkg/authentication/user/user.go: upstream's
// four methods plus GetTenant.
type arkUserInfo interface {
	GetName() string
	GetUID() string
	GetGroups() []string
	GetExtra() map[string][]string
	GetTenant() string
}

// arkDefaultInfo stands for user.DefaultInfo: its GetTenant is Tenant, or
// else the part of the name before a ':' ("system:admin" is in system).
type arkDefaultInfo struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
	Tenant string
}

func (i *arkDefaultInfo) GetName() string               { return i.Name }
func (i *arkDefaultInfo) GetUID() string                { return i.UID }
func (i *arkDefaultInfo) GetGroups() []string           { return i.Groups }
func (i *arkDefaultInfo) GetExtra() map[string][]string { return i.Extra }
func (i *arkDefaultInfo) GetTenant() string {
	if i.Tenant != "" {
		return i.Tenant
	}
	if before, _, found := strings.Cut(i.Name, ":"); found {
		return before
	}
	return ""
}

// arkObject stands for runtime.Object; arkMeta for the metav1.Object
// methods the glue reads through meta.Accessor.
type arkObject interface{ isObject() }

type arkMeta interface {
	GetName() string
	GetGenerateName() string
	GetDeletionTimestamp() *time.Time
}

type arkObjectMeta struct {
	Name, GenerateName, Tenant, Namespace string
	DeletionTimestamp                     *time.Time
}

func (m *arkObjectMeta) GetName() string                  { return m.Name }
func (m *arkObjectMeta) GetGenerateName() string          { return m.GenerateName }
func (m *arkObjectMeta) GetDeletionTimestamp() *time.Time { return m.DeletionTimestamp }

// arkDaemonSet and arkDeployment stand for k8s.io/kubernetes/pkg/apis/apps's.
type arkDaemonSet struct{ arkObjectMeta }
type arkDeployment struct{ arkObjectMeta }

func (*arkDaemonSet) isObject()  {}
func (*arkDeployment) isObject() {}

// arkAccessor stands for meta.Accessor: an error for nil or an object
// without metadata.
func arkAccessor(o arkObject) (arkMeta, error) {
	if m, ok := o.(arkMeta); ok {
		return m, nil
	}
	return nil, errors.New("object does not implement the Object interfaces")
}

// arkAttributes stands for admission.Attributes (interfaces.go), the
// methods the glue calls.
type arkAttributes interface {
	GetName() string
	GetNamespace() string
	GetResource() arkGroupVersionResource
	GetSubresource() string
	GetOperation() arkOperation
	GetObject() arkObject
	GetOldObject() arkObject
	GetKind() arkGroupVersionKind
	GetUserInfo() arkUserInfo
	GetTenant() string
}

// arkAttributesRecord stands for what admission.NewAttributesRecord returns.
type arkAttributesRecord struct {
	object, oldObject       arkObject
	kind                    arkGroupVersionKind
	tenant, namespace, name string
	resource                arkGroupVersionResource
	subresource             string
	operation               arkOperation
	userInfo                arkUserInfo
}

func (r *arkAttributesRecord) GetName() string                      { return r.name }
func (r *arkAttributesRecord) GetNamespace() string                 { return r.namespace }
func (r *arkAttributesRecord) GetResource() arkGroupVersionResource { return r.resource }
func (r *arkAttributesRecord) GetSubresource() string               { return r.subresource }
func (r *arkAttributesRecord) GetOperation() arkOperation           { return r.operation }
func (r *arkAttributesRecord) GetObject() arkObject                 { return r.object }
func (r *arkAttributesRecord) GetOldObject() arkObject              { return r.oldObject }
func (r *arkAttributesRecord) GetKind() arkGroupVersionKind         { return r.kind }
func (r *arkAttributesRecord) GetUserInfo() arkUserInfo             { return r.userInfo }
func (r *arkAttributesRecord) GetTenant() string                    { return r.tenant }

// arkStatusError stands for apierrors.StatusError: code, reason, details
// and message.
type arkStatusError struct {
	Code              int
	Reason            string
	Group, Kind, Name string
	Message           string
}

func (e *arkStatusError) Error() string { return e.Message }

// arkNewForbidden stands for admission.NewForbidden (errors.go): the name
// is the request's, else the object's name or generateName, else
// "Unknown"; the text is apierrors.NewForbidden's.
func arkNewForbidden(a arkAttributes, internalError error) error {
	name := a.GetName()
	if name == "" {
		name = "Unknown"
		if m, err := arkAccessor(a.GetObject()); err == nil {
			if m.GetName() != "" {
				name = m.GetName()
			} else if m.GetGenerateName() != "" {
				name = m.GetGenerateName()
			}
		}
	}
	return &arkStatusError{
		Code: http.StatusForbidden, Reason: "Forbidden",
		Group: a.GetResource().Group, Kind: a.GetResource().Resource, Name: name,
		Message: fmt.Sprintf("%s %q is forbidden: %v", a.GetResource().groupResource(), name, internalError),
	}
}

// arkInterface, arkValidationInterface and arkObjectInterfaces stand for
// admission.Interface, admission.ValidationInterface and
// admission.ObjectInterfaces.
type arkInterface interface{ Handles(arkOperation) bool }

type arkObjectInterfaces interface{}

type arkValidationInterface interface {
	arkInterface
	Validate(a arkAttributes, o arkObjectInterfaces) error
}

// arkHandler stands for admission.Handler (NewHandler(ops...)).
type arkHandler struct{ ops map[arkOperation]bool }

func arkNewHandler(ops ...arkOperation) *arkHandler {
	h := &arkHandler{ops: map[arkOperation]bool{}}
	for _, op := range ops {
		h.ops[op] = true
	}
	return h
}

func (h *arkHandler) Handles(op arkOperation) bool { return h.ops[op] }

// arkPlugins stands for admission.Plugins (plugins.go): Register by name
// (a name registered twice is fatal there, klog.Fatalf), and building a
// plugin from its name and configuration.
type arkPlugins struct {
	registry map[string]func(io.Reader) (arkInterface, error)
}

func (ps *arkPlugins) Register(name string, f func(config io.Reader) (arkInterface, error)) {
	if _, found := ps.registry[name]; found {
		panic(fmt.Sprintf("Admission plugin %q was registered twice", name))
	}
	if ps.registry == nil {
		ps.registry = map[string]func(io.Reader) (arkInterface, error){}
	}
	ps.registry[name] = f
}

func (ps *arkPlugins) initPlugin(name string, config io.Reader) (arkInterface, error) {
	f, ok := ps.registry[name]
	if !ok {
		return nil, fmt.Errorf("unknown admission plugin: %s", name)
	}
	return f(config)
}

// ---- The glue: plugin/pkg/admission/systemdaemonset/admission.go in an Arktos tree ----

// systemDaemonSetPluginName is the file's PluginName: Arktos's own name,
// so kube-apiserver's AllOrderedPlugins and default-on list
// (pkg/kubeapiserver/options/plugins.go) take tpkit's plugin unchanged.
const systemDaemonSetPluginName = daemonset.ArktosPluginName

// systemDaemonSet is the plugin: Arktos's handler, tpkit's decision.
type systemDaemonSet struct {
	*arkHandler
	core *daemonset.Plugin
}

var _ arkValidationInterface = (*systemDaemonSet)(nil)

// Validate asks the core, and refuses with Arktos's own NewForbidden, so
// the 403's name and text are Arktos's.
func (s *systemDaemonSet) Validate(a arkAttributes, _ arkObjectInterfaces) error {
	err := s.core.Validate(context.TODO(), arktosRequest(a))
	if e, ok := tpadmission.AsError(err); ok {
		return arkNewForbidden(a, errors.New(e.Message))
	}
	return err
}

// arktosRequest is the core's request from Arktos's attributes. user.Info
// is a tpadmission.UserInfo as it is, and its GetTenant is read by the
// admin rule.
func arktosRequest(a arkAttributes) tpadmission.Request {
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
	if a.GetOperation() == arkDelete {
		carried = a.GetOldObject()
	}
	if m, err := arkAccessor(carried); err == nil {
		r.ObjectName = m.GetName()
	}
	if m, err := arkAccessor(a.GetOldObject()); err == nil {
		r.BeingDeleted = m.GetDeletionTimestamp() != nil
	}
	return r
}

// newSystemDaemonSet builds the plugin from its admission configuration
// (nil: Arktos's rule only). DELETE is handled too, for the admin rule.
func newSystemDaemonSet(config io.Reader) (arkInterface, error) {
	c, err := daemonset.ParseConfig(config)
	if err != nil {
		return nil, err
	}
	return &systemDaemonSet{arkHandler: arkNewHandler(arkCreate, arkUpdate, arkDelete), core: daemonset.New(c)}, nil
}

// newSystemDaemonSetDefault is the file's New(): Arktos's existing
// admission_test.go calls New() and keeps passing.
func newSystemDaemonSetDefault() arkInterface {
	p, _ := newSystemDaemonSet(nil)
	return p
}

// registerSystemDaemonSet is the file's Register, called from
// RegisterAllAdmissionPlugins as before.
func registerSystemDaemonSet(plugins *arkPlugins) {
	plugins.Register(systemDaemonSetPluginName, newSystemDaemonSet)
}

// ---- Tests of the glue, through the stand-in registry ----

func arktosPlugin(t *testing.T, config string) arkValidationInterface {
	t.Helper()
	plugins := &arkPlugins{}
	registerSystemDaemonSet(plugins)
	var r io.Reader
	if config != "" {
		r = strings.NewReader(config)
	}
	p, err := plugins.initPlugin("SystemDaemonSet", r)
	if err != nil {
		t.Fatal(err)
	}
	return p.(arkValidationInterface)
}

// arktosValidate runs p as kube-apiserver's validating chain does: only for
// an operation it handles.
func arktosValidate(p arkValidationInterface, a arkAttributes) error {
	if !p.Handles(a.GetOperation()) {
		return nil
	}
	return p.Validate(a, nil)
}

// dsCreate is a DaemonSet CREATE as Arktos's create handler makes it: the
// name is not in the attributes, only in the object.
func dsCreate(tenant, name string, u arkUserInfo) *arkAttributesRecord {
	return &arkAttributesRecord{
		object: &arkDaemonSet{arkObjectMeta{Name: name, Tenant: tenant, Namespace: "kube-system"}},
		kind:   arkGroupVersionKind{"apps", "v1", "DaemonSet"},
		tenant: tenant, namespace: "kube-system",
		resource:  arkGroupVersionResource{"apps", "v1", "daemonsets"},
		operation: arkCreate, userInfo: u,
	}
}

// TestArktosDropIn: the 403 an Arktos client gets is Arktos's own, byte
// for byte (the recorded responses/72-daemonset-create-acme.json), and the
// cases of Arktos's own admission_test.go still hold.
func TestArktosDropIn(t *testing.T) {
	p := arktosPlugin(t, "")
	err := arktosValidate(p, dsCreate("acme", "ds", nil))
	var st *arkStatusError
	if !errors.As(err, &st) {
		t.Fatalf("got %T %v, want a status error", err, err)
	}
	want := arkStatusError{Code: 403, Reason: "Forbidden", Group: "apps", Kind: "daemonsets", Name: "ds",
		Message: `daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet`}
	if *st != want {
		t.Fatalf("got %+v\nwant %+v", *st, want)
	}

	// Arktos's plugin/pkg/admission/systemdaemonset/admission_test.go,
	// through New() as there: system allowed, another tenant refused, other
	// kinds allowed whatever the tenant.
	def := newSystemDaemonSetDefault().(arkValidationInterface)
	if err := arktosValidate(def, dsCreate("system", "valid-ds", nil)); err != nil {
		t.Errorf("DaemonSet in system: %v", err)
	}
	if err := arktosValidate(def, dsCreate("other", "invalid-ds", nil)); err == nil {
		t.Error("DaemonSet in another tenant was admitted")
	}
	deploy := &arkAttributesRecord{
		object: &arkDeployment{arkObjectMeta{Name: "valid-deploy"}}, kind: arkGroupVersionKind{"apps", "v1", "Deployment"},
		tenant: "other", namespace: "ns-dummy", resource: arkGroupVersionResource{"apps", "v1", "deployments"}, operation: arkCreate,
	}
	if err := arktosValidate(def, deploy); err != nil {
		t.Errorf("Deployment in another tenant: %v", err)
	}

	// tpkit's exemptions: status and finishing a deletion.
	status := dsCreate("other", "ds", nil)
	status.operation, status.subresource, status.oldObject = arkUpdate, "status", status.object
	if err := arktosValidate(p, status); err != nil {
		t.Errorf("status update: %v", err)
	}
	now := time.Now()
	finishing := dsCreate("other", "ds", nil)
	finishing.operation, finishing.name = arkUpdate, "ds"
	finishing.oldObject = &arkDaemonSet{arkObjectMeta{Name: "ds", Tenant: "other", DeletionTimestamp: &now}}
	if err := arktosValidate(p, finishing); err != nil {
		t.Errorf("update of a DaemonSet being deleted: %v", err)
	}
}

// TestArktosAdminRule: with {"adminOnly": true} in the plugin's admission
// configuration, only admins manage DaemonSets; an Arktos user's tenant
// comes from user.Info's GetTenant (its Tenant, or the name's prefix).
func TestArktosAdminRule(t *testing.T) {
	p := arktosPlugin(t, `{"adminOnly": true}`)
	cases := []struct {
		name string
		op   arkOperation
		user arkUserInfo
		want string // "" to admit; else the whole message
	}{
		{"tenant user", arkCreate, &arkDefaultInfo{Name: "alice", Tenant: "acme"},
			`daemonsets.apps "ds" is forbidden: user "alice" (tenant acme) may not create DaemonSets: only cluster admins may (members of system:masters, or users of the system tenant)`},
		{"tenant user deleting", arkDelete, &arkDefaultInfo{Name: "alice", Tenant: "acme"},
			`daemonsets.apps "ds" is forbidden: user "alice" (tenant acme) may not delete DaemonSets: only cluster admins may (members of system:masters, or users of the system tenant)`},
		{"no tenant fails closed", arkCreate, &arkDefaultInfo{Name: "carol"},
			`daemonsets.apps "ds" is forbidden: user "carol" (tenant unknown) may not create DaemonSets: only cluster admins may (members of system:masters, or users of the system tenant)`},
		{"extra cannot override GetTenant", arkCreate, &arkDefaultInfo{Name: "mallory", Tenant: "acme", Extra: map[string][]string{"tenant": {"system"}}},
			`daemonsets.apps "ds" is forbidden: user "mallory" (tenant acme) may not create DaemonSets: only cluster admins may (members of system:masters, or users of the system tenant)`},
		{"no user", arkCreate, nil,
			`daemonsets.apps "ds" is forbidden: user "" (tenant unknown) may not create DaemonSets: only cluster admins may (members of system:masters, or users of the system tenant)`},
		{"system tenant user", arkCreate, &arkDefaultInfo{Name: "sam", Tenant: "system"}, ""},
		{"system: name prefix", arkUpdate, &arkDefaultInfo{Name: "system:kube-controller-manager"}, ""},
		{"system:masters member", arkDelete, &arkDefaultInfo{Name: "ops", Tenant: "acme", Groups: []string{"system:masters"}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := dsCreate("system", "ds", tc.user)
			a.operation = tc.op
			if tc.op != arkCreate {
				a.name, a.oldObject = "ds", a.object
			}
			if tc.op == arkDelete {
				a.object = nil
			}
			err := arktosValidate(p, a)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var st *arkStatusError
			if !errors.As(err, &st) || st.Code != 403 || st.Message != tc.want {
				t.Fatalf("got %v\nwant 403 %s", err, tc.want)
			}
		})
	}
	// A misspelt configuration stops the plugin from being built, as a
	// bad admission configuration stops kube-apiserver.
	plugins := &arkPlugins{}
	registerSystemDaemonSet(plugins)
	if _, err := plugins.initPlugin("SystemDaemonSet", strings.NewReader(`{"adminOnIy": true}`)); err == nil {
		t.Fatal("a misspelt configuration was accepted")
	}
}

// Example_arktosSystemDaemonSet: tpkit's DaemonSet plugin registered in
// Arktos's registry under Arktos's own name answers Arktos's 403.
func Example_arktosSystemDaemonSet() {
	plugins := &arkPlugins{}
	registerSystemDaemonSet(plugins) // in place of Arktos's systemdaemonset.Register
	p, _ := plugins.initPlugin("SystemDaemonSet", strings.NewReader(`{"adminOnly": true}`))
	v := p.(arkValidationInterface)

	alice := &arkDefaultInfo{Name: "alice", Tenant: "acme"}
	fmt.Println(v.Validate(dsCreate("acme", "ds", alice), nil))
	fmt.Println(v.Validate(dsCreate("system", "ds", alice), nil))
	fmt.Println(v.Validate(dsCreate("system", "ds", &arkDefaultInfo{Name: "system:admin"}), nil))
	// Output:
	// daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet
	// daemonsets.apps "ds" is forbidden: user "alice" (tenant acme) may not create DaemonSets: only cluster admins may (members of system:masters, or users of the system tenant)
	// <nil>
}
