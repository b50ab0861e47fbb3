package admission

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

func TestErrorText(t *testing.T) {
	cases := []struct {
		err  *Error
		code int
		want string
	}{
		// Arktos's recorded answer (responses/72-daemonset-create-acme.json).
		{NewForbidden("apps", "daemonsets", "ds", "only system tenant is allowed to have DaemonSet"), 403,
			`daemonsets.apps "ds" is forbidden: only system tenant is allowed to have DaemonSet`},
		{NewForbidden("", "tenants", "system", "the system tenant cannot be deleted"), 403,
			`tenants "system" is forbidden: the system tenant cannot be deleted`},
		{NewForbidden("apps", "daemonsets", "", "no"), 403, `daemonsets.apps is forbidden: no`},
		{NewForbidden("", "", "x", "no"), 403, `forbidden: no`},
		{NewForbidden("", "tenants", `a"b`, "no"), 403, `tenants "a\"b" is forbidden: no`},
		{NewInvalid("", "Tenant", "all", "metadata.name", "all", `tenant name "all" is reserved and cannot be used`), 422,
			`Tenant "all" is invalid: metadata.name: Invalid value: "all": tenant name "all" is reserved and cannot be used`},
		{NewInvalid("example.com", "Widget", "w", "spec.size", "", ""), 422,
			`Widget.example.com "w" is invalid: spec.size: Invalid value: ""`},
		{&Error{Reason: "Teapot", Message: "short and stout"}, 500, `Teapot: short and stout`},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %s\nwant      %s", got, tc.want)
		}
		if got := tc.err.Code(); got != tc.code {
			t.Errorf("%s: Code() = %d, want %d", tc.want, got, tc.code)
		}
	}
}

func TestAsError(t *testing.T) {
	e := NewForbidden("apps", "daemonsets", "ds", "no")
	if got, ok := AsError(fmt.Errorf("wrapped: %w", e)); !ok || got != e {
		t.Fatalf("AsError(wrapped) = %v, %v", got, ok)
	}
	if _, ok := AsError(errors.New("plain")); ok {
		t.Fatal("a plain error is an *Error")
	}
	if _, ok := AsError(nil); ok {
		t.Fatal("nil is an *Error")
	}
}

func TestErrorName(t *testing.T) {
	for _, tc := range []struct{ name, object, want string }{
		{"n", "o", "n"}, {"", "o", "o"}, {"", "", "Unknown"},
	} {
		if got := (Request{Name: tc.name, ObjectName: tc.object}).ErrorName(); got != tc.want {
			t.Errorf("Name %q ObjectName %q: ErrorName = %q, want %q", tc.name, tc.object, got, tc.want)
		}
	}
}

// fixed is a plugin that handles ops and answers err, counting its calls.
type fixed struct {
	ops   []Operation
	err   error
	calls int
}

func (f *fixed) Handles(op Operation) bool {
	for _, o := range f.ops {
		if o == op {
			return true
		}
	}
	return false
}

func (f *fixed) Validate(context.Context, Request) error {
	f.calls++
	return f.err
}

func TestChain(t *testing.T) {
	no := NewForbidden("", "things", "x", "no")
	createOnly := &fixed{ops: []Operation{Create}, err: no}
	deleteOnly := &fixed{ops: []Operation{Delete}, err: errors.New("delete refused")}
	after := &fixed{ops: []Operation{Create, Delete}}
	c := Chain{createOnly, deleteOnly, after}

	if err := c.Validate(context.Background(), Request{Operation: Create}); err != no {
		t.Fatalf("CREATE: %v, want the first refusal", err)
	}
	if after.calls != 0 {
		t.Fatal("a plugin after a refusal ran")
	}
	if err := c.Validate(context.Background(), Request{Operation: Delete}); err == nil || err.Error() != "delete refused" {
		t.Fatalf("DELETE: %v", err)
	}
	if createOnly.calls != 1 {
		t.Fatalf("CREATE-only plugin called %d times, want 1 (not for DELETE)", createOnly.calls)
	}
	if err := c.Validate(context.Background(), Request{Operation: Update}); err != nil {
		t.Fatalf("UPDATE, handled by none: %v", err)
	}
	for op, want := range map[Operation]bool{Create: true, Delete: true, Update: false, Connect: false} {
		if got := c.Handles(op); got != want {
			t.Errorf("Chain.Handles(%s) = %v, want %v", op, got, want)
		}
	}
	if (Chain{}).Handles(Create) {
		t.Error("an empty chain handles CREATE")
	}
}
