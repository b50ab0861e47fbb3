package faketp

import (
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// targetKind is what a URL path names.
type targetKind int

const (
	targetRoot         targetKind = iota // /api or /apis
	targetGroup                          // /apis/{g}
	targetGroupVersion                   // /api/v1, /apis/{g}/{v}
	targetCollection                     // a list of objects
	targetObject                         // one object (maybe a subresource)
)

// target is a parsed API path.
type target struct {
	kind  targetKind
	core  bool // under /api rather than /apis
	group string
	gv    schema.GroupVersion
	res   *resource
	// tenant is the tenant of the path. A short path (no tenant segment)
	// means the caller's tenant: parsePath leaves SystemTenant and sets
	// short, and the request's user decides (forCaller).
	tenant string
	short  bool
	// allTenants: the collection lists and watches every tenant, a
	// /tenants/all/{res} path.
	allTenants bool
	// namespace is "" for collections across namespaces and for objects
	// that are not namespaced.
	namespace string
	name      string
	sub       string
	// watch: the path used the legacy /watch/ prefix.
	watch bool
}

// tenantAll is the tenant segment that means every tenant in Arktos paths
// (/api/v1/tenants/all/pods); no tenant may have that name.
const tenantAll = tenancy.ForbiddenTenantName

// subresources are the served subresources of each resource.
var subresources = map[string][]string{
	"tenants":    {"finalize", "status"},
	"namespaces": {"finalize", "status"},
	"pods":       {"binding", "status"},
	"services":   {"status"},
	"daemonsets": {"status"},
}

// parsePath parses an API path ("/api/...", "/apis/...") into a target. It
// returns an API status error (NotFound or BadRequest) for anything else.
// It never panics, whatever the input (see FuzzParsePath).
func parsePath(p string) (target, error) {
	notFound := notFoundPath(p)
	if !strings.HasPrefix(p, "/") {
		return target{}, notFound
	}
	p = strings.TrimSuffix(p[1:], "/")
	segs := strings.Split(p, "/")
	for _, s := range segs {
		if s == "" {
			return target{}, notFound
		}
	}
	var t target
	switch segs[0] {
	case "api":
		t.core = true
		if len(segs) == 1 {
			return target{kind: targetRoot, core: true}, nil
		}
		t.gv = schema.GroupVersion{Version: segs[1]}
		segs = segs[2:]
	case "apis":
		if len(segs) == 1 {
			return target{kind: targetRoot}, nil
		}
		t.group = segs[1]
		if len(segs) == 2 {
			if !servesGroup(segs[1]) {
				return target{}, notFound
			}
			return target{kind: targetGroup, group: segs[1]}, nil
		}
		t.gv = schema.GroupVersion{Group: segs[1], Version: segs[2]}
		segs = segs[3:]
	default:
		return target{}, notFound
	}
	if !servesGroupVersion(t.gv) {
		return target{}, notFound
	}
	if len(segs) == 0 {
		t.kind = targetGroupVersion
		return t, nil
	}
	if segs[0] == "watch" {
		t.watch = true
		segs = segs[1:]
		if len(segs) == 0 {
			return target{}, notFound
		}
	}
	t.tenant = tenancy.SystemTenant
	if segs[0] == "tenants" {
		switch {
		case len(segs) <= 2 && t.core: // the tenants resource itself
			return t.resourcePath(segs, true, notFound)
		case len(segs) <= 2:
			return target{}, notFound
		}
		if segs[1] != tenantAll {
			if err := tenancy.ValidateTenantName(segs[1]); err != nil {
				return target{}, apierrors.NewBadRequest(fmt.Sprintf("invalid tenant in path: %v", err))
			}
		}
		t.tenant = segs[1]
		t, err := t.resourcePath(segs[2:], false, notFound)
		// /tenants/all/{res} is every tenant, as in Arktos. Below a
		// namespace or for one object, "all" stays a tenant name that no
		// tenant can have: empty lists and NotFound, as Arktos answers.
		if err == nil && t.tenant == tenantAll && t.kind == targetCollection && t.namespace == "" {
			t.allTenants = true
		}
		return t, err
	}
	return t.resourcePath(segs, true, notFound)
}

// resourcePath parses what follows the group version or the tenant prefix.
// short says there was no tenant prefix.
func (t target) resourcePath(segs []string, short bool, notFound error) (target, error) {
	t.short = short
	if segs[0] == "namespaces" && len(segs) >= 3 {
		if !isSub("namespaces", segs[2]) || len(segs) > 3 {
			// /namespaces/{ns}/{res}[/{name}[/{sub}]]
			t.namespace = segs[1]
			segs = segs[2:]
			t.res = lookupResource(t.gv, segs[0])
			if t.res == nil || t.res.scope != scopeNamespace || len(segs) > 3 {
				return target{}, notFound
			}
			return t.object(segs, notFound)
		}
	}
	t.res = lookupResource(t.gv, segs[0])
	if t.res == nil || len(segs) > 3 {
		return target{}, notFound
	}
	switch t.res.scope {
	case scopeCluster:
		if !short {
			return target{}, notFound
		}
		t.tenant = ""
	case scopeNamespace:
		if len(segs) > 1 { // /pods/{name}: pods need a namespace
			return target{}, notFound
		}
	}
	return t.object(segs, notFound)
}

// forCaller gives a short path the tenant of the user who asks, as Arktos
// does: a short path is never every tenant (sample 48), and the admin and
// unauthenticated callers are in the system tenant.
func (t target) forCaller(u admission.UserInfo) (target, error) {
	if !t.short || t.res == nil || t.res.scope == scopeCluster {
		return t, nil
	}
	tenant := admission.UserTenant(u)
	if tenant == "" {
		return t, nil
	}
	if err := tenancy.ValidateTenantName(tenant); err != nil {
		return target{}, apierrors.NewBadRequest(fmt.Sprintf("the tenant of user %q: %v", truncate(u.GetName()), err))
	}
	t.tenant = tenant
	return t, nil
}

// object finishes a target from {res}[/{name}[/{sub}]].
func (t target) object(segs []string, notFound error) (target, error) {
	if t.namespace != "" {
		if err := validPathName(t.namespace); err != nil {
			return target{}, err
		}
	}
	if len(segs) == 1 {
		t.kind = targetCollection
		return t, nil
	}
	t.kind = targetObject
	t.name = segs[1]
	if err := validPathName(t.name); err != nil {
		return target{}, err
	}
	if len(segs) == 3 {
		if !isSub(t.res.gvr.Resource, segs[2]) {
			return target{}, notFound
		}
		t.sub = segs[2]
	}
	if t.watch && t.sub != "" {
		return target{}, notFound
	}
	return t, nil
}

func isSub(res, sub string) bool {
	for _, s := range subresources[res] {
		if s == sub {
			return true
		}
	}
	return false
}

// validPathName rejects names no object can have, as kube-apiserver does
// for "." and ".." and names with "%".
func validPathName(n string) error {
	if n == "." || n == ".." || strings.ContainsAny(n, "%") {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid name in path: %q", truncate(n)))
	}
	return nil
}

func servesGroup(g string) bool {
	for _, gv := range groupVersions {
		if gv.Group == g && g != "" {
			return true
		}
	}
	return false
}

// truncate keeps echoed input short in messages.
func truncate(s string) string {
	if len(s) > 128 {
		return s[:128] + "..."
	}
	return s
}
