package k8s

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/tenancy"
)

// WrapConfig returns a copy of cfg whose clients keep Arktos tenants: every
// request and response passes through Transport, and the wire format is JSON
// (protobuf has no place for metadata.tenant). Typed clientsets, dynamic
// clients and informers built from the result all see tenancy.TenantOf(obj).
func WrapConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &Transport{Base: rt} })
	return c
}

type tenantContextKey struct{}

// WithTenant returns a context that makes Transport send the request to the
// Arktos path of tenant. Typed clients only build short paths
// (/api/v1/namespaces/...), which Arktos reads as the system tenant; a request
// for a regular tenant's object needs /api/v1/tenants/{tenant}/namespaces/....
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantContextKey{}, tenant)
}

type rawContextKey struct{}

// WithRawResponse returns a context that makes Transport pass the response
// body on as the server sent it, metadata.tenant not moved into the
// annotation: for a reader that takes metadata.tenant itself and would
// rather not have a large body copied.
func WithRawResponse(ctx context.Context) context.Context {
	return context.WithValue(ctx, rawContextKey{}, true)
}

// TenantFromContext returns the tenant set by WithTenant, or "".
func TenantFromContext(ctx context.Context) string {
	t, _ := ctx.Value(tenantContextKey{}).(string)
	return t
}

// Transport is an http.RoundTripper that translates between Arktos JSON and
// upstream types:
//   - responses: metadata.tenant of every object (single objects, list items and
//     watch events) moves into the annotation tenancy.TenantAnnotation;
//   - requests: the annotation moves back into metadata.tenant in POST and PUT
//     bodies, and the path is rewritten to the tenant path when the context
//     carries a non-system tenant (see WithTenant).
type Transport struct {
	// Base performs the request; http.DefaultTransport when nil.
	Base http.RoundTripper
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.Base
	if base == nil {
		base = http.DefaultTransport
	}
	out := req
	if tenant := TenantFromContext(req.Context()); !tenancy.IsSystem(tenant) {
		if err := tenancy.ValidateTenantName(tenant); err != nil {
			return nil, fmt.Errorf("tenancy transport: %w", err)
		}
		out = req.Clone(req.Context())
		out.URL.Path = TenantPath(req.URL.Path, tenant)
		out.URL.RawPath = ""
	}
	if out.Body != nil && out.Body != http.NoBody && (out.Method == http.MethodPost || out.Method == http.MethodPut) && isJSON(out.Header.Get("Content-Type")) {
		body, err := io.ReadAll(out.Body)
		_ = out.Body.Close()
		if err != nil {
			return nil, err
		}
		body = LowerTenant(body)
		if out == req {
			out = req.Clone(req.Context())
		}
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.ContentLength = int64(len(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	resp, err := base.RoundTrip(out)
	if err != nil || resp.Body == nil || !isJSON(resp.Header.Get("Content-Type")) || req.Context().Value(rawContextKey{}) != nil {
		return resp, err
	}
	if isWatch(out.URL) {
		resp.Body = newLiftingBody(resp.Body)
	} else {
		resp.Body = &wholeBody{src: resp.Body, size: resp.ContentLength}
	}
	resp.ContentLength = -1
	resp.Header.Del("Content-Length")
	return resp, nil
}

// isWatch reports whether a request asks for a watch stream, whose events
// must be passed on one by one as they come.
func isWatch(u *url.URL) bool {
	if w := u.Query().Get("watch"); w == "true" || w == "1" {
		return true
	}
	return strings.Contains(u.Path, "/watch/")
}

func isJSON(contentType string) bool {
	return strings.HasPrefix(contentType, "application/json")
}

// clusterScoped lists resources whose paths never take a tenant segment.
var clusterScoped = map[string]bool{"tenants": true, "nodes": true}

// TenantPath rewrites an API path to its Arktos tenant form:
//
//	/api/v1/namespaces/ns/pods        -> /api/v1/tenants/t/namespaces/ns/pods
//	/api/v1/pods                      -> /api/v1/tenants/t/pods
//	/apis/apps/v1/namespaces/ns/daemonsets -> /apis/apps/v1/tenants/t/namespaces/ns/daemonsets
//
// Paths that already name a tenant, discovery paths and cluster-scoped
// resources are returned unchanged.
func TenantPath(path, tenant string) string {
	var prefixLen int
	switch {
	case strings.HasPrefix(path, "/api/v1/"):
		prefixLen = len("/api/v1/")
	case strings.HasPrefix(path, "/apis/"):
		// /apis/{group}/{version}/...
		rest := path[len("/apis/"):]
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			return path
		}
		j := strings.IndexByte(rest[i+1:], '/')
		if j < 0 {
			return path
		}
		prefixLen = len("/apis/") + i + 1 + j + 1
	default:
		return path
	}
	rest := path[prefixLen:]
	first, _, _ := strings.Cut(rest, "/")
	if rest == "" || first == "tenants" || clusterScoped[first] {
		return path
	}
	return path[:prefixLen] + "tenants/" + tenant + "/" + rest
}

// LowerTenant moves tenancy.TenantAnnotation back into metadata.tenant in one JSON
// object. Bodies that are not JSON objects, or carry no annotation, are
// returned unchanged.
func LowerTenant(body []byte) []byte {
	if !bytes.Contains(body, []byte(tenancy.TenantAnnotation)) {
		return body
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(body, &obj) != nil {
		return body
	}
	var md map[string]json.RawMessage
	if json.Unmarshal(obj["metadata"], &md) != nil || md == nil {
		return body
	}
	var ann map[string]string
	if json.Unmarshal(md["annotations"], &ann) != nil {
		return body
	}
	tenant, ok := ann[tenancy.TenantAnnotation]
	if !ok {
		return body
	}
	delete(ann, tenancy.TenantAnnotation)
	if len(ann) == 0 {
		delete(md, "annotations")
	} else {
		md["annotations"] = mustMarshal(ann)
	}
	md["tenant"] = mustMarshal(tenant)
	obj["metadata"] = mustMarshal(md)
	return mustMarshal(obj)
}

// LiftTenant moves metadata.tenant into tenancy.TenantAnnotation in one JSON value:
// an object, a list (every item), or a watch event (its object). Values
// without "tenant" are returned unchanged without being parsed.
func LiftTenant(raw []byte) ([]byte, error) {
	if !bytes.Contains(raw, []byte(`"tenant"`)) {
		return raw, nil
	}
	if out, ok := liftFast(raw); ok {
		return out, nil
	}
	return liftSlow(raw)
}

// liftSlow is LiftTenant by decoding: the reference for liftFast, and the path
// for unusual input.
func liftSlow(raw []byte) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("decoding response object: %w", err)
	}
	changed := false
	if items, ok := top["items"]; ok && len(items) > 0 && items[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(items, &list); err != nil {
			return nil, fmt.Errorf("decoding list items: %w", err)
		}
		for i, item := range list {
			lifted, ok, err := liftObject(item)
			if err != nil {
				return nil, err
			}
			if ok {
				list[i], changed = lifted, true
			}
		}
		if changed {
			top["items"] = mustMarshal(list)
		}
	}
	if obj, ok := top["object"]; ok { // a watch event
		lifted, ok, err := liftObject(obj)
		if err != nil {
			return nil, err
		}
		if ok {
			top["object"], changed = lifted, true
		}
	}
	if md, ok := top["metadata"]; ok {
		lifted, ok, err := liftMetadata(md)
		if err != nil {
			return nil, err
		}
		if ok {
			top["metadata"], changed = lifted, true
		}
	}
	if !changed {
		return raw, nil
	}
	return mustMarshal(top), nil
}

func liftObject(raw json.RawMessage) (json.RawMessage, bool, error) {
	if !isObject(raw) || !bytes.Contains(raw, []byte(`"tenant"`)) {
		return raw, false, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, false, fmt.Errorf("decoding object: %w", err)
	}
	md, ok, err := liftMetadata(obj["metadata"])
	if err != nil || !ok {
		return raw, false, err
	}
	obj["metadata"] = md
	return mustMarshal(obj), true, nil
}

// isObject reports whether raw is a JSON object. Anything else (a list item
// that is a number, metadata that is an array) is left as it is, for the
// decoder to judge: it is not an object with a tenant.
func isObject(raw json.RawMessage) bool {
	t := bytes.TrimLeft(raw, " \t\r\n")
	return len(t) > 0 && t[0] == '{'
}

func liftMetadata(raw json.RawMessage) (json.RawMessage, bool, error) {
	if !isObject(raw) || !bytes.Contains(raw, []byte(`"tenant"`)) {
		return raw, false, nil
	}
	var md map[string]json.RawMessage
	if err := json.Unmarshal(raw, &md); err != nil {
		return nil, false, fmt.Errorf("decoding metadata: %w", err)
	}
	rawTenant, ok := md["tenant"]
	if !ok {
		return raw, false, nil
	}
	var tenant string
	if err := json.Unmarshal(rawTenant, &tenant); err != nil {
		return nil, false, fmt.Errorf("metadata.tenant is not a string: %s", rawTenant)
	}
	delete(md, "tenant")
	if tenant != "" {
		var ann map[string]string
		if a, ok := md["annotations"]; ok {
			if err := json.Unmarshal(a, &ann); err != nil {
				return nil, false, fmt.Errorf("decoding metadata.annotations: %w", err)
			}
		}
		if ann == nil {
			ann = make(map[string]string, 1)
		}
		ann[tenancy.TenantAnnotation] = tenant
		md["annotations"] = mustMarshal(ann)
	}
	return mustMarshal(md), true, nil
}

// mustMarshal marshals values that came out of json.Unmarshal, which cannot fail.
func mustMarshal(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("tenancy: re-encoding decoded JSON: %v", err))
	}
	return b
}

// liftingBody rewrites a response body value by value. One decoder handles a
// single object, a list, and a watch stream (one JSON value per event), and it
// never reads ahead of what the caller asks for, so watch events are not delayed.
type liftingBody struct {
	src io.ReadCloser
	dec *json.Decoder
	buf bytes.Buffer
	err error
}

func newLiftingBody(src io.ReadCloser) *liftingBody {
	return &liftingBody{src: src, dec: json.NewDecoder(src)}
}

func (b *liftingBody) Read(p []byte) (int, error) {
	for b.buf.Len() == 0 {
		if b.err != nil {
			return 0, b.err
		}
		var raw json.RawMessage
		if err := b.dec.Decode(&raw); err != nil {
			b.err = bodyError(err)
			continue
		}
		out, err := LiftTenant(raw)
		if err != nil {
			b.err = fmt.Errorf("tenancy transport: %w", err)
			continue
		}
		b.buf.Write(out)
		b.buf.WriteByte('\n')
	}
	return b.buf.Read(p)
}

func (b *liftingBody) Close() error { return b.src.Close() }

// wholeBody lifts a response that is one JSON value (an object or a list,
// anything but a watch) in one piece: the body is read once, into a buffer
// of its announced size, and rewritten once. A list page of a few MB is
// copied twice instead of the five times a value-by-value decoder takes.
type wholeBody struct {
	src  io.ReadCloser
	size int64 // the response's Content-Length; -1 when not known
	r    *bytes.Reader
	err  error
}

func (b *wholeBody) Read(p []byte) (int, error) {
	if b.r == nil && b.err == nil {
		b.load()
	}
	if b.err != nil {
		return 0, b.err
	}
	return b.r.Read(p)
}

func (b *wholeBody) load() {
	var buf bytes.Buffer
	if b.size > 0 && b.size < 1<<30 {
		buf.Grow(int(b.size) + bytes.MinRead) // room for ReadFrom's EOF probe
	}
	if _, err := buf.ReadFrom(b.src); err != nil {
		b.err = err
		return
	}
	out, err := LiftTenant(buf.Bytes())
	if err != nil {
		b.err = fmt.Errorf("tenancy transport: %w", err)
		return
	}
	b.r = bytes.NewReader(out)
}

func (b *wholeBody) Close() error { return b.src.Close() }

// bodyError passes the reader's own errors through unchanged, because
// client-go's watch decoder compares them by identity: io.EOF ends a watch
// normally and io.ErrUnexpectedEOF makes the reflector re-watch from its last
// resourceVersion, while any other error forces a full relist. Only malformed
// JSON is tpkit's finding, so only that is wrapped.
func bodyError(err error) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		return fmt.Errorf("tenancy transport: %w", err)
	}
	return err
}
