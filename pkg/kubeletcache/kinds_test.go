package kubeletcache

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestReferencedNames(t *testing.T) {
	ref := func(n string) corev1.LocalObjectReference { return corev1.LocalObjectReference{Name: n} }
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		ImagePullSecrets: []corev1.LocalObjectReference{ref("pull")},
		Volumes: []corev1.Volume{
			{Name: "a", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cm-vol")}}},
			{Name: "b", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "sec-vol"}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: ref("cm-proj")}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: ref("sec-proj")}},
			}}}},
			{Name: "d", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "x", NodePublishSecretRef: &corev1.LocalObjectReference{Name: "sec-csi"}}}},
			{Name: "e", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: ref("cm-vol")}}}, // duplicate
		},
		InitContainers: []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("cm-init")}}}}},
		Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref("cm-env"), Key: "k"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: ref("sec-env"), Key: "k"}}},
			{Name: "C", Value: "plain"},
			{Name: "D", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: ref(""), Key: "k"}}},
		}, EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: ref("sec-envfrom")}}}}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "e", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: ref("cm-eph")}}}}}},
	}}
	if got, want := ConfigMapNames(pod), []string{"cm-vol", "cm-proj", "cm-init", "cm-env", "cm-eph"}; !slices.Equal(got, want) {
		t.Errorf("ConfigMapNames = %v, want %v", got, want)
	}
	if got, want := SecretNames(pod), []string{"pull", "sec-vol", "sec-proj", "sec-csi", "sec-envfrom", "sec-env"}; !slices.Equal(got, want) {
		t.Errorf("SecretNames = %v, want %v", got, want)
	}
	if got := ConfigMapNames(&corev1.Pod{}); len(got) != 0 {
		t.Errorf("empty pod references %v", got)
	}
}

func TestOptionsRejectUnknownStrategy(t *testing.T) {
	o := Options{Strategy: "Poll"}
	if err := o.setDefaults(); err == nil {
		t.Fatal("unknown strategy accepted")
	}
	o = Options{}
	if err := o.setDefaults(); err != nil || o.Strategy != Watch || o.TTL != DefaultTTL {
		t.Fatalf("defaults = %+v, %v", o, err)
	}
}
