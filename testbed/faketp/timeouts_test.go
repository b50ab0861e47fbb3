package faketp_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/pkg/ops"
	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// A client that sends its body slowly, or leaves a keep-alive connection
// idle, is closed after the TP's timeouts; a watch outlives them.
func TestTimeoutsCloseSlowClientsNotWatches(t *testing.T) {
	to := ops.Timeouts{ReadHeader: 200 * time.Millisecond, Read: 300 * time.Millisecond, Idle: 300 * time.Millisecond, MaxHeaderBytes: 64 << 10}
	tp, err := faketp.NewTP(faketp.TPOptions{Name: "tp1", KubeconfigDir: t.TempDir(), Timeouts: to})
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tp.Stop() })
	addr := tp.Addr()

	watch, err := http.Get(tp.URL() + "/api/v1/tenants/all/configmaps?watch=1")
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Body.Close()
	events := bufio.NewScanner(watch.Body)

	slow, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Close()
	// Headers in full, then a body that never comes.
	if _, err := io.WriteString(slow, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"); err != nil {
		t.Fatal(err)
	}
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	if _, err := io.WriteString(idle, "GET /api/v1/namespaces HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r, err := http.ReadResponse(bufio.NewReader(idle), nil)
	if err != nil || r.StatusCode != http.StatusOK {
		t.Fatalf("request on the keep-alive connection: %v %v", err, r)
	}
	for name, c := range map[string]net.Conn{"slow body": slow, "idle": idle} {
		_ = c.SetReadDeadline(time.Now().Add(30 * time.Second)) // hang guard
		if _, err := io.ReadAll(c); err != nil {
			t.Errorf("%s client: the TP kept the connection: %v", name, err)
		}
	}
	// Both timeouts have passed; the watch still delivers.
	if err := tp.Seed(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "after", "namespace": "default"}}); err != nil {
		t.Fatal(err)
	}
	for events.Scan() {
		if strings.Contains(events.Text(), `"name":"after"`) {
			return
		}
	}
	t.Fatalf("the watch ended before the event: %v", events.Err())
}
