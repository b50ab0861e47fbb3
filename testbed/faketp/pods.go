package faketp

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	validfield "k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tpkit-dev/tpkit/pkg/admission"
	"github.com/tpkit-dev/tpkit/testbed/faketp/store"
)

// serveBinding binds a pod to a node, as the scheduler does through
// POST .../pods/{name}/binding (sample 95): spec.nodeName is set and the
// PodScheduled condition added; the answer is a Status Success with code
// 201. A pod that is already bound (to any node) or being deleted is 409
// Conflict, as kube-apiserver answers.
func (tp *TP) serveBinding(w http.ResponseWriter, r *http.Request, t target) {
	o, err := readObject(w, r)
	if err != nil {
		writeError(w, err)
		return
	}
	if k := str(o, "kind"); k != "" && k != "Binding" {
		writeError(w, apierrors.NewBadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (Binding)", truncate(k))))
		return
	}
	if n := str(o, "metadata", "name"); n != t.name {
		writeError(w, apierrors.NewBadRequest("name in URL does not match name in Binding object"))
		return
	}
	node := str(o, "target", "name")
	var errs validfield.ErrorList
	if k := str(o, "target", "kind"); k != "" && k != "Node" {
		errs = append(errs, validfield.NotSupported(validfield.NewPath("target", "kind"), k, []string{"Node", "<empty>"}))
	}
	if node == "" {
		errs = append(errs, validfield.Required(validfield.NewPath("target", "name"), ""))
	}
	if len(errs) > 0 {
		writeError(w, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, t.name, errs))
		return
	}
	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: t.name, Namespace: t.namespace}, Target: corev1.ObjectReference{Kind: "Node", Name: node}}
	if err := tp.admit(r.Context(), admission.Create, t, t.name, binding, nil, nil, userFrom(r.Context())); err != nil {
		writeError(w, err)
		return
	}
	if err := tp.bindPod(t, node); err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusCreated, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
}

// bindPod sets the pod's node, retrying on concurrent writes.
func (tp *TP) bindPod(t target, node string) error {
	k := t.key(t.name)
	for attempt := 0; ; attempt++ {
		stored, ok := tp.st().Get(k)
		if !ok {
			return apierrors.NewNotFound(t.res.gvr.GroupResource(), t.name)
		}
		o, err := decodeObject(stored.Data)
		if err != nil {
			return err
		}
		conflict := func(format string, a ...any) error {
			return apierrors.NewConflict(schema.GroupResource{Resource: "pods/binding"}, t.name, fmt.Errorf(format, a...))
		}
		spec := ensureChild(o, "spec")
		if str(o, "metadata", "deletionTimestamp") != "" {
			return conflict("pod %s is being deleted, cannot be assigned to a host", t.name)
		}
		if cur := str(spec, "nodeName"); cur != "" {
			return conflict("pod %v is already assigned to node %q", t.name, cur)
		}
		spec["nodeName"] = node
		setPodCondition(ensureChild(o, "status"), "PodScheduled", "True")
		updated, err := tp.st().Update(k, stored.RV, t.res.index(o), encoder(o))
		if errors.Is(err, store.ErrConflict) && attempt < 10 {
			continue
		}
		if err != nil {
			return storeError(err, t.res, t.name)
		}
		tp.changed(updated.Key)
		return nil
	}
}

// setPodCondition sets condition typ of a pod status, with a transition
// time when its status changes.
func setPodCondition(status obj, typ, value string) {
	conds := list(status, "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && str(m, "type") == typ {
			if str(m, "status") != value {
				m["status"] = value
				m["lastTransitionTime"] = time.Now().UTC().Format(time.RFC3339)
			}
			return
		}
	}
	status["conditions"] = append(conds, obj{"type": typ, "status": value, "lastProbeTime": nil, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339)})
}
