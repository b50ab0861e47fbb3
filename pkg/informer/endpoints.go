package informer

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/klog/v2"
)

// EndpointsMode says where a TP's service endpoints are read from.
type EndpointsMode string

const (
	// EndpointsAuto reads discovery.k8s.io/v1 EndpointSlices when the TP's
	// discovery lists that group version, else core/v1 Endpoints. Arktos
	// serves no EndpointSlices; upstream Kubernetes serves both.
	EndpointsAuto EndpointsMode = "auto"
	// EndpointsCore always reads core/v1 Endpoints.
	EndpointsCore EndpointsMode = "endpoints"
	// EndpointsSlices always reads discovery.k8s.io/v1 EndpointSlices.
	EndpointsSlices EndpointsMode = "endpointslices"
)

// ParseEndpointsMode parses "auto" (or ""), "endpoints" or "endpointslices".
func ParseEndpointsMode(s string) (EndpointsMode, error) {
	switch m := EndpointsMode(s); m {
	case "":
		return EndpointsAuto, nil
	case EndpointsAuto, EndpointsCore, EndpointsSlices:
		return m, nil
	}
	return "", fmt.Errorf("endpoints mode %q: want auto, endpoints or endpointslices", s)
}

// EndpointsListWatch lists and watches a TP's service endpoints as core/v1
// Endpoints or discovery.k8s.io/v1 EndpointSlices, whichever its mode picks.
// In auto mode the choice is made from the TP's discovery at the first list
// that reaches the TP, and kept: a reflector over it receives objects of one
// of the two types (give it a nil expected type).
type EndpointsListWatch struct {
	client Client
	scope  Scope
	name   string // the TP, for the log line of the choice

	mu     sync.Mutex
	mode   EndpointsMode
	chosen *ListWatch
	listAs ListAs
}

// SetListAs makes lists of the chosen resource decode through f (see
// ListAs). Call it before the first list.
func (e *EndpointsListWatch) SetListAs(f ListAs) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.listAs = f
	if e.chosen != nil {
		e.chosen.SetListAs(f)
	}
}

// NewEndpointsListWatch returns the endpoints list/watch of TP name over c.
func NewEndpointsListWatch(c Client, name string, mode EndpointsMode, s Scope) (*EndpointsListWatch, error) {
	if _, err := ParseEndpointsMode(string(mode)); err != nil {
		return nil, err
	}
	if mode == "" {
		mode = EndpointsAuto
	}
	if err := s.validate(Endpoints); err != nil {
		return nil, fmt.Errorf("informer: listing endpoints: %w", err)
	}
	return &EndpointsListWatch{client: c, scope: s, name: name, mode: mode}, nil
}

// Chosen returns the resource read, or "" before the choice is made.
func (e *EndpointsListWatch) Chosen() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.chosen == nil {
		return ""
	}
	return e.chosen.resource.Name
}

// choose returns the list/watch to use, asking the TP's discovery once in
// auto mode. An error (the TP is unreachable) leaves the choice open.
func (e *EndpointsListWatch) choose(ctx context.Context) (*ListWatch, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.chosen != nil {
		return e.chosen, nil
	}
	r := Endpoints
	switch e.mode {
	case EndpointsSlices:
		r = EndpointSlices
	case EndpointsAuto:
		served, err := servesEndpointSlices(ctx, e.client)
		if err != nil {
			return nil, fmt.Errorf("informer: asking tenant partition %s whether it serves %s: %w", e.name, discoveryv1.SchemeGroupVersion, err)
		}
		if served {
			r = EndpointSlices
		}
		klog.InfoS("Reading service endpoints", "partition", e.name, "resource", r.Name, "groupVersion", r.GroupVersion.String())
	}
	lw, err := NewListWatch(e.client, r, e.scope)
	if err != nil {
		return nil, err
	}
	lw.SetListAs(e.listAs)
	e.chosen = lw
	return lw, nil
}

// servesEndpointSlices asks discovery whether the TP serves
// discovery.k8s.io/v1 endpointslices. A 404 means it does not.
func servesEndpointSlices(ctx context.Context, c Client) (bool, error) {
	rc, err := c.RESTClientFor(discoveryv1.SchemeGroupVersion)
	if err != nil {
		return false, err
	}
	body, err := rc.Get().AbsPath("/apis", discoveryv1.SchemeGroupVersion.Group, discoveryv1.SchemeGroupVersion.Version).Do(ctx).Raw()
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return false, fmt.Errorf("reading its discovery document: %w", err)
	}
	for _, r := range list.APIResources {
		if r.Name == EndpointSlices.Name {
			return true, nil
		}
	}
	return false, nil
}

// ListWithContext lists the chosen resource.
func (e *EndpointsListWatch) ListWithContext(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	lw, err := e.choose(ctx)
	if err != nil {
		return nil, err
	}
	return lw.ListWithContext(ctx, opts)
}

// WatchWithContext watches the chosen resource.
func (e *EndpointsListWatch) WatchWithContext(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	lw, err := e.choose(ctx)
	if err != nil {
		return nil, err
	}
	return lw.WatchWithContext(ctx, opts)
}
