package faketp_test

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	tenancyk8s "github.com/tpkit-dev/tpkit/pkg/tenancy/k8s"
	"github.com/tpkit-dev/tpkit/testbed/partitiontest"
)

func kubernetesFor(cfg *rest.Config) (*partitiontest.Clients, error) {
	return partitiontest.NewClients(tenancyk8s.WrapConfig(cfg), nil)
}

// recordingPlugin records every admission call and rejects objects named
// "deny-me".
type recordingPlugin struct {
	mu   sync.Mutex
	seen []admission.Request
}

func (p *recordingPlugin) Handles(admission.Operation) bool { return true }

func (p *recordingPlugin) Validate(_ context.Context, r admission.Request) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen = append(p.seen, r)
	if r.Name == "deny-me" {
		return apierrors.NewForbidden(schema.GroupResource{Resource: r.Resource}, r.Name, errDenied)
	}
	return nil
}

func (p *recordingPlugin) records() []admission.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]admission.Request(nil), p.seen...)
}

type deniedError struct{}

func (deniedError) Error() string { return "denied by the test plugin" }

var errDenied = deniedError{}
