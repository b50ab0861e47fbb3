package kubeletcache

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"

	"github.com/tpkit-dev/tpkit/pkg/informer"
)

// kind describes one resource the manager serves: how to reach it on a TP,
// and which of its objects a pod references.
type kind[T runtime.Object] struct {
	api       informer.Resource // api.Name, the plural, names it in errors and metrics
	empty     func() T
	immutable func(T) bool
	names     func(pod *corev1.Pod) []string
}

var configMapKind = kind[*corev1.ConfigMap]{
	api:       informer.ConfigMaps,
	empty:     func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
	immutable: func(o *corev1.ConfigMap) bool { return o.Immutable != nil && *o.Immutable },
	names:     ConfigMapNames,
}

var secretKind = kind[*corev1.Secret]{
	api:       informer.Secrets,
	empty:     func() *corev1.Secret { return &corev1.Secret{} },
	immutable: func(o *corev1.Secret) bool { return o.Immutable != nil && *o.Immutable },
	names:     SecretNames,
}

// get GETs ns/name from c, a core/v1 client: the request a typed client
// makes.
func (k *kind[T]) get(ctx context.Context, c rest.Interface, ns, name string) (T, error) {
	out := k.empty()
	err := c.Get().Namespace(ns).Resource(k.api.Name).Name(name).Do(ctx).Into(out)
	return out, err
}

// visitContainers calls fn for every container of every type.
func visitContainers(spec *corev1.PodSpec, fn func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource)) {
	for i := range spec.InitContainers {
		fn(spec.InitContainers[i].Env, spec.InitContainers[i].EnvFrom)
	}
	for i := range spec.Containers {
		fn(spec.Containers[i].Env, spec.Containers[i].EnvFrom)
	}
	for i := range spec.EphemeralContainers {
		fn(spec.EphemeralContainers[i].Env, spec.EphemeralContainers[i].EnvFrom)
	}
}

// names collects distinct non-empty names in order of appearance.
type names []string

func (n *names) add(s string) {
	if s == "" {
		return
	}
	for _, have := range *n {
		if have == s {
			return
		}
	}
	*n = append(*n, s)
}

// ConfigMapNames returns the configmaps pod references: volumes, projected
// volumes, env and envFrom of every container.
func ConfigMapNames(pod *corev1.Pod) []string {
	var out names
	for _, v := range pod.Spec.Volumes {
		if v.ConfigMap != nil {
			out.add(v.ConfigMap.Name)
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ConfigMap != nil {
					out.add(s.ConfigMap.Name)
				}
			}
		}
	}
	visitContainers(&pod.Spec, func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		for _, e := range envFrom {
			if e.ConfigMapRef != nil {
				out.add(e.ConfigMapRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				out.add(e.ValueFrom.ConfigMapKeyRef.Name)
			}
		}
	})
	return out
}

// SecretNames returns the secrets pod references: image pull secrets,
// secret, projected and CSI volumes, env and envFrom of every container.
func SecretNames(pod *corev1.Pod) []string {
	var out names
	for _, s := range pod.Spec.ImagePullSecrets {
		out.add(s.Name)
	}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			out.add(v.Secret.SecretName)
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					out.add(s.Secret.Name)
				}
			}
		case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
			out.add(v.CSI.NodePublishSecretRef.Name)
		}
	}
	visitContainers(&pod.Spec, func(env []corev1.EnvVar, envFrom []corev1.EnvFromSource) {
		for _, e := range envFrom {
			if e.SecretRef != nil {
				out.add(e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				out.add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	})
	return out
}
