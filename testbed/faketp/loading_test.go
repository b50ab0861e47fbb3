package faketp_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// TestLoadingHoldsReadiness: a cluster started with Loading serves
// requests but answers /readyz 503 until DoneLoading, so that a harness
// sees a TP as ready only with its seed and generated objects in.
func TestLoadingHoldsReadiness(t *testing.T) {
	c := faketp.StartT(t, faketp.Options{Partitions: 2, Loading: true})
	readyz := func(tp *faketp.TP) (int, string) {
		t.Helper()
		resp, err := http.Get(tp.URL() + "/readyz?verbose")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tp := range c.TPs() {
		if code, body := readyz(tp); code != http.StatusServiceUnavailable || !strings.Contains(body, "loading") || !tp.Loading() {
			t.Fatalf("%s while loading: /readyz %d %q", tp.Name(), code, body)
		}
	}
	// Requests are served meanwhile: the loader writes through them.
	cs, err := kubernetesFor(c.TP("tp1").RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatalf("list while loading: %v", err)
	}
	c.DoneLoading()
	for _, tp := range c.TPs() {
		if code, body := readyz(tp); code != http.StatusOK || tp.Loading() {
			t.Fatalf("%s after DoneLoading: /readyz %d %q", tp.Name(), code, body)
		}
	}
	// Without Loading a TP is ready at once, as before.
	if code, body := readyz(faketp.StartT(t, faketp.Options{}).TPs()[0]); code != http.StatusOK {
		t.Fatalf("without Loading: /readyz %d %q", code, body)
	}
}
