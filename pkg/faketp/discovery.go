package faketp

import (
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var allVerbs = metav1.Verbs{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// serveDiscovery answers the legacy (unaggregated) discovery documents.
// kubectl asks for aggregated discovery first and falls back to these when
// the answer is plain JSON, as with any server that predates it (Arktos).
func serveDiscovery(w http.ResponseWriter, r *http.Request, t target) {
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
		list := &metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}}
		for _, gv := range groupVersions {
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
		list := &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: t.gv.String(),
			APIResources: []metav1.APIResource{},
		}
		for _, res := range resources {
			if res.gvr.GroupVersion() != t.gv {
				continue
			}
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: res.gvr.Resource, SingularName: res.singular, Namespaced: res.scope == scopeNamespace,
				Kind: res.kind, Verbs: allVerbs, ShortNames: res.shortNames, Categories: res.categories,
			})
			for _, sub := range subresources[res.gvr.Resource] {
				list.APIResources = append(list.APIResources, metav1.APIResource{
					Name: res.gvr.Resource + "/" + sub, Namespaced: res.scope == scopeNamespace,
					Kind: res.kind, Verbs: metav1.Verbs{"get", "patch", "update"},
				})
			}
		}
		writeJSON(w, http.StatusOK, list)
	}
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
// computes strategic merge patches from its built-in types. /openapi/v2 is
// 404, as on servers that only publish v3.
func (tp *TP) serveOpenAPI(w http.ResponseWriter, r *http.Request) {
	p := r.URL.Path
	if p == "/openapi/v3" || p == "/openapi/v3/" {
		paths := map[string]any{}
		for _, gv := range groupVersions {
			paths[gvPath(gv)] = map[string]string{"serverRelativeURL": "/openapi/v3/" + gvPath(gv) + "?hash=" + openAPIHash}
		}
		writeJSON(w, http.StatusOK, map[string]any{"paths": paths})
		return
	}
	for _, gv := range groupVersions {
		if p == "/openapi/v3/"+gvPath(gv) {
			writeJSON(w, http.StatusOK, openAPIDoc(gv))
			return
		}
	}
	writeError(w, notFoundPath(p))
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
