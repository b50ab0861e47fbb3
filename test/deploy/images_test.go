package deploy

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// kustomization is the part of kustomization.yaml these checks read.
type kustomization struct {
	Resources []string        `json:"resources"`
	Images    []imageOverride `json:"images"`
}

type imageOverride struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	if err := yaml.Unmarshal(b, &k); err != nil {
		t.Fatalf("%s: %v", dir, err)
	}
	return k
}

// TestImagesTaggedInOnePlace: every container of a base names its image
// tpkit/<program> (a program in cmd/) without a tag, and the base's
// kustomization sets that image's tag (images: newTag), so an admin sets the
// version the images were tagged with in one place. The overlays take it
// from their base.
func TestImagesTaggedInOnePlace(t *testing.T) {
	bases, err := filepath.Glob("../../deploy/*/kustomization.yaml")
	if err != nil || len(bases) < 3 {
		t.Fatalf("bases %v: %v", bases, err)
	}
	for _, kf := range bases {
		dir := filepath.Dir(kf)
		k := readKustomization(t, dir)
		var used []string
		for _, r := range k.Resources {
			b, err := os.ReadFile(filepath.Join(dir, r))
			if err != nil {
				t.Fatal(err)
			}
			for _, doc := range documents(b) {
				var tm struct{ Kind string }
				if err := yaml.Unmarshal(doc, &tm); err != nil {
					t.Fatalf("%s/%s: %v", dir, r, err)
				}
				var pod *corev1.PodTemplateSpec
				switch tm.Kind {
				case "Deployment":
					var d appsv1.Deployment
					if err := yaml.Unmarshal(doc, &d); err != nil {
						t.Fatal(err)
					}
					pod = &d.Spec.Template
				case "DaemonSet":
					var d appsv1.DaemonSet
					if err := yaml.Unmarshal(doc, &d); err != nil {
						t.Fatal(err)
					}
					pod = &d.Spec.Template
				default:
					continue
				}
				for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
					prog, ok := strings.CutPrefix(c.Image, "tpkit/")
					if !ok || strings.ContainsAny(prog, ":@") {
						t.Errorf("%s/%s container %s: image %q, want tpkit/<program> with the tag left to kustomization.yaml", dir, r, c.Name, c.Image)
						continue
					}
					if _, err := os.Stat(filepath.Join("../../cmd", prog)); err != nil {
						t.Errorf("%s/%s container %s: image %q is no program in cmd/", dir, r, c.Name, c.Image)
					}
					if !slices.Contains(used, c.Image) {
						used = append(used, c.Image)
					}
				}
			}
		}
		for _, img := range used {
			i := slices.IndexFunc(k.Images, func(x imageOverride) bool { return x.Name == img })
			if i < 0 || k.Images[i].NewTag == "" {
				t.Errorf("%s: kustomization.yaml sets no newTag for %s under images:", dir, img)
			}
		}
	}
	overlays, _ := filepath.Glob("../../deploy/overlays/*/*/kustomization.yaml")
	if len(overlays) == 0 {
		t.Fatal("no overlays found")
	}
	for _, kf := range overlays {
		if k := readKustomization(t, filepath.Dir(kf)); len(k.Images) > 0 {
			t.Errorf("%s sets images: the tag belongs to its base's kustomization.yaml alone", kf)
		}
	}
}
