package faketp

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"net/http"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var allVerbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// apiResource is an entry of a discovery document as Arktos writes it:
// metav1.APIResource plus "tenanted" (whether the resource lives in
// tenants). singularName is empty, as kube-apiserver 1.18 leaves it.
type apiResource struct {
	Name               string   `json:"name"`
	SingularName       string   `json:"singularName"`
	Namespaced         bool     `json:"namespaced"`
	Kind               string   `json:"kind"`
	Verbs              []string `json:"verbs"`
	ShortNames         []string `json:"shortNames,omitempty"`
	Categories         []string `json:"categories,omitempty"`
	StorageVersionHash string   `json:"storageVersionHash,omitempty"`
	Tenanted           bool     `json:"tenanted"`
}

type apiResourceList struct {
	Kind         string        `json:"kind"`
	APIVersion   string        `json:"apiVersion,omitempty"`
	GroupVersion string        `json:"groupVersion"`
	Resources    []apiResource `json:"resources"`
}

// subresourceVerbs and subresourceKinds describe the served subresources.
var (
	subresourceVerbs = map[string][]string{"status": {"get", "patch", "update"}, "finalize": {"update"}, "binding": {"create"}}
	subresourceKinds = map[string]string{"binding": "Binding"}
)

// storageVersionHash is kube-apiserver's: the first 8 bytes of the SHA-256
// of group/version/kind, in base64.
func storageVersionHash(gvk schema.GroupVersionKind) string {
	sum := sha256.Sum256([]byte(gvk.Group + "/" + gvk.Version + "/" + gvk.Kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}

// serveDiscovery answers the legacy (unaggregated) discovery documents of
// the group versions the TP serves, as Arktos (which predates aggregated
// discovery) does; kubectl falls back to them.
func (tp *TP) serveDiscovery(w http.ResponseWriter, r *http.Request, t target) {
	switch t.kind {
	case targetRoot:
		if t.core {
			writeJSON(w, http.StatusOK, &metav1.APIVersions{
				TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
				Versions: []string{"v1"},
				ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
					{ClientCIDR: "0.0.0.0/0", ServerAddress: r.Host},
				},
			})
			return
		}
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{}}
		for _, gv := range tp.groupVersions() {
			if gv.Group != "" {
				list.Groups = append(list.Groups, apiGroup(gv.Group))
			}
		}
		writeJSON(w, http.StatusOK, list)
	case targetGroup:
		g := apiGroup(t.group)
		g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
		writeJSON(w, http.StatusOK, &g)
	case targetGroupVersion:
		list := &apiResourceList{Kind: "APIResourceList", GroupVersion: t.gv.String(), Resources: []apiResource{}}
		if !t.core {
			list.APIVersion = "v1" // kube-apiserver leaves it out of /api/v1 only
		}
		for _, res := range resources {
			if res.gvr.GroupVersion() != t.gv {
				continue
			}
			verbs := res.verbs
			if verbs == nil {
				verbs = allVerbs
			}
			list.Resources = append(list.Resources, apiResource{
				Name: res.gvr.Resource, Namespaced: res.scope == scopeNamespace, Kind: res.kind, Verbs: verbs,
				ShortNames: res.shortNames, Categories: res.categories, StorageVersionHash: storageVersionHash(res.gvk()),
				Tenanted: res.scope != scopeCluster,
			})
			for _, sub := range subresources[res.gvr.Resource] {
				kind := subresourceKinds[sub]
				if kind == "" {
					kind = res.kind
				}
				list.Resources = append(list.Resources, apiResource{
					Name: res.gvr.Resource + "/" + sub, Namespaced: res.scope == scopeNamespace,
					Kind: kind, Verbs: subresourceVerbs[sub], Tenanted: res.scope != scopeCluster,
				})
			}
		}
		writeJSON(w, http.StatusOK, list)
	}
}

// groupVersions are the group versions the TP serves: discovery.k8s.io
// only with Options.EndpointSlices, since Arktos has none.
func (tp *TP) groupVersions() []schema.GroupVersion {
	var out []schema.GroupVersion
	for _, gv := range groupVersions {
		if tp.servesGroup(gv.Group) {
			out = append(out, gv)
		}
	}
	return out
}

func (tp *TP) servesGroup(g string) bool {
	return g != discoveryv1.GroupName || tp.opts.EndpointSlices
}

func apiGroup(name string) metav1.APIGroup {
	g := metav1.APIGroup{Name: name}
	for _, gv := range groupVersions {
		if gv.Group == name {
			v := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
			g.Versions = append(g.Versions, v)
			g.PreferredVersion = v
		}
	}
	return g
}

// serveOpenAPI serves a minimal OpenAPI v3: for every served kind, a PATCH
// operation that declares the fieldValidation query parameter. That is what
// kubectl looks for to choose server-side field validation, so its default
// commands (create -f, apply) work without downloading schemas; fake-tp
// ignores fieldValidation. No schemas are published, so kubectl apply
// computes strategic merge patches from its built-in types.
//
// /openapi/v2 is an empty Swagger 2.0 document (protobuf, as client-go
// asks for it, or JSON): kubectl validates the items of a kind: List on
// the client with it (v3 cannot say that a List supports fieldValidation),
// and skips kinds that the document does not describe.
func (tp *TP) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/openapi/v2" {
		if strings.Contains(r.Header.Get("Accept"), "protobuf") {
			w.Header().Set("Content-Type", "application/octet-stream") // kube-openapi's, for protobuf
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(openAPIv2Proto())
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"swagger": "2.0", "info": map[string]string{"title": "fake-tp", "version": serverVersion.GitVersion}, "paths": map[string]any{}})
		return
	}
	if p == "/openapi/v3" || p == "/openapi/v3/" {
		paths := map[string]any{}
		for _, gv := range tp.groupVersions() {
			paths[gvPath(gv)] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gvPath(gv) + "?hash=" + openAPIHash}
		}
		writeJSON(w, http.StatusOK, map[string]any{"paths": paths})
		return
	}
	for _, gv := range tp.groupVersions() {
		if p == "/openapi/v3/"+gvPath(gv) {
			writeJSON(w, http.StatusOK, openAPIDoc(gv))
			return
		}
	}
	writeError(w, notFoundPath(p))
}

// openAPIv2Proto is the empty Swagger document as gnostic's openapi_v2
// protobuf message, hand-encoded: Document{swagger: "2.0" (field 1), info
// (field 2): Info{title (1), version (2)}, paths (field 8): {}}.
func openAPIv2Proto() []byte {
	field := func(b []byte, num int, data []byte) []byte {
		b = binary.AppendUvarint(b, uint64(num<<3|2)) // wire type 2: length-delimited
		b = binary.AppendUvarint(b, uint64(len(data)))
		return append(b, data...)
	}
	info := field(field(nil, 1, []byte("fake-tp")), 2, []byte(serverVersion.GitVersion))
	return field(field(field(nil, 1, []byte("2.0")), 2, info), 8, nil)
}

// openAPIHash versions the documents; they only change with fake-tp.
const openAPIHash = "faketp1"

func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.Group + "/" + gv.Version
}

func openAPIDoc(gv schema.GroupVersion) map[string]any {
	paths := map[string]any{}
	for _, res := range resources {
		if res.gvr.GroupVersion() != gv {
			continue
		}
		p := "/" + gvPath(gv) + "/"
		switch res.scope {
		case scopeNamespace:
			p += "namespaces/{namespace}/"
		}
		p += res.gvr.Resource + "/{name}"
		paths[p] = map[string]any{
			"patch": map[string]any{
				"operationId":                     "patch" + res.kind,
				"x-kubernetes-group-version-kind": map[string]string{"group": gv.Group, "version": gv.Version, "kind": res.kind},
				"parameters": []any{
					map[string]any{"name": "fieldValidation", "in": "query", "schema": map[string]string{"type": "string"}},
					map[string]any{"name": "fieldManager", "in": "query", "schema": map[string]string{"type": "string"}},
				},
				"responses": map[string]any{"200": map[string]any{"description": "OK"}},
			},
		}
	}
	return map[string]any{
		"openapi": "3.0.0",
		"info":    map[string]string{"title": "fake-tp", "version": serverVersion.GitVersion},
		"paths":   paths,
	}
}
