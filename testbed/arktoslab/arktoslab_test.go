package arktoslab

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tpkit-dev/tpkit/testbed/testbin"
)

func TestRequest(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/ok":
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, `{"method":%q,"body":%q,"type":%q}`, r.Method, b, r.Header.Get("Content-Type"))
		case "/missing":
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"kind":"Status","message":"pods \"x\" not found"}`)
		default:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "boom\n")
		}
	}))
	defer srv.Close()

	var got map[string]interface{}
	if err := Request("POST", srv.URL+"/ok", `{"a":1}`, &got); err != nil {
		t.Fatal(err)
	}
	if Str(got, "method") != "POST" || Str(got, "body") != `{"a":1}` || Str(got, "type") != "application/json" {
		t.Errorf("server saw %v", got)
	}
	if err := Request("GET", srv.URL+"/ok", "", nil); err != nil {
		t.Errorf("undecoded 2xx: %v", err)
	}
	err := Request("GET", srv.URL+"/missing", "", &got)
	if !IsNotFound(err) || err.Error() != `HTTP 404: pods "x" not found` {
		t.Errorf("404: %v (IsNotFound %v)", err, IsNotFound(err))
	}
	err = Request("GET", srv.URL+"/other", "", nil)
	var apiErr *APIError
	if !errors.As(err, &apiErr) || IsNotFound(err) || err.Error() != "HTTP 500: boom" {
		t.Errorf("500: %v", err)
	}
}

func TestStr(t *testing.T) {
	obj := map[string]interface{}{"status": map[string]interface{}{"phase": "Running", "n": 3.0}}
	for _, c := range []struct {
		path []string
		want string
	}{
		{[]string{"status", "phase"}, "Running"},
		{[]string{"status", "n"}, ""},
		{[]string{"status", "phase", "deeper"}, ""},
		{[]string{"spec"}, ""},
	} {
		if got := Str(obj, c.path...); got != c.want {
			t.Errorf("Str(%v) = %q, want %q", c.path, got, c.want)
		}
	}
}

func TestForward(t *testing.T) {
	target, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer target.Close()
	go func() {
		for {
			c, err := target.Accept()
			if err != nil {
				return
			}
			go func() { defer c.Close(); _, _ = io.Copy(c, c) }()
		}
	}()
	f, err := Forward("127.0.0.1", target.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for i := 0; i < 2; i++ {
		c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", f.Port()))
		if err != nil {
			t.Fatal(err)
		}
		msg := fmt.Sprintf("hello %d\n", i)
		if _, err := io.WriteString(c, msg); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, len(msg))
		if _, err := io.ReadFull(c, buf); err != nil || string(buf) != msg {
			t.Errorf("echo through the forwarder: %q, %v", buf, err)
		}
		c.Close()
	}
	if f.Conns() != 2 {
		t.Errorf("Conns = %d, want 2", f.Conns())
	}
	f.Close()
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", f.Port())); err == nil {
		c.Close()
		t.Error("a closed forwarder still accepts")
	}
}

func TestSpawnStopTail(t *testing.T) {
	log := filepath.Join(t.TempDir(), "prog.log")
	cmd, err := Spawn(log, "/bin/sh", "-c", `echo one; echo two; echo "aws=$AWS_EC2_METADATA_DISABLED"; exec sleep 60`)
	if err != nil {
		t.Fatal(err)
	}
	if !Alive(cmd) {
		t.Fatal("not alive after Spawn")
	}
	err = testbin.Poll(5*time.Second, 10*time.Millisecond, func() error {
		if got := Tail(log, 2); got != "two\naws=true" {
			return fmt.Errorf("Tail = %q", got)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	Stop(cmd)
	if Alive(cmd) {
		t.Error("alive after Stop")
	}
	if _, err := Spawn(log, "/nonexistent/prog"); err == nil || !strings.Contains(err.Error(), "/nonexistent/prog") {
		t.Errorf("Spawn of a missing program: %v", err)
	}
	if Tail(filepath.Join(t.TempDir(), "none"), 3) != "" {
		t.Error("Tail of a missing file is not empty")
	}
	if _, err := os.Stat(log); err != nil {
		t.Error(err)
	}
}

func TestFreePort(t *testing.T) {
	p, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
	if err != nil {
		t.Fatalf("port %d is not free: %v", p, err)
	}
	ln.Close()
}

// TestDNAT follows a service's KUBE-SERVICES rule to its endpoints' DNAT
// destinations, and finds nothing for another address, port or protocol.
func TestDNAT(t *testing.T) {
	n := NATTable(strings.Split(`-A KUBE-SERVICES -d 10.96.0.10/32 -p udp -m comment --comment "kube-system/kube-dns:dns cluster IP" -m udp --dport 53 -j KUBE-SVC-AAA
-A KUBE-SERVICES -d 10.96.0.1/32 -p tcp -m comment --comment "default/kubernetes:https cluster IP" -m tcp --dport 443 -j KUBE-SVC-BBB
-A KUBE-SVC-AAA -m statistic --mode random --probability 0.5 -j KUBE-SEP-A2
-A KUBE-SVC-AAA -j KUBE-SEP-A1
-A KUBE-SEP-A1 -p udp -m udp -j DNAT --to-destination 10.244.1.2:53
-A KUBE-SEP-A2 -p udp -m udp -j DNAT --to-destination 10.244.1.1:53
-A KUBE-SVC-BBB -j KUBE-SEP-B1
-A KUBE-SEP-B1 -p tcp -m tcp -j DNAT --to-destination 10.254.0.1:6443`, "\n"))
	cases := []struct {
		ip, proto string
		port      int
		want      string
	}{
		{"10.96.0.10", "udp", 53, "10.244.1.1:53,10.244.1.2:53"},
		{"10.96.0.1", "tcp", 443, "10.254.0.1:6443"},
		{"10.96.0.10", "tcp", 53, ""},
		{"10.96.0.1", "tcp", 80, ""},
		{"10.96.0.11", "udp", 53, ""},
	}
	for _, tc := range cases {
		if got := strings.Join(n.DNAT(tc.ip, tc.proto, tc.port), ","); got != tc.want {
			t.Errorf("DNAT(%s, %s, %d) = %q, want %q", tc.ip, tc.proto, tc.port, got, tc.want)
		}
	}
}

func TestChecks(t *testing.T) {
	var c Checks
	if err := c.Run("ok", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	bad := errors.New("saw something else")
	if err := c.Run("bad", func() error { return bad }); err != bad {
		t.Fatalf("Run returned %v, want the check's error", err)
	}
	if got := c.Failed(); len(got) != 1 || got[0] != "bad" {
		t.Fatalf("Failed() = %v, want [bad]", got)
	}
	if s := c.Summary(); !strings.HasPrefix(s, "== 2 checks in ") || !strings.HasSuffix(s, "failed: [bad]") {
		t.Fatalf("Summary() = %q", s)
	}
}
