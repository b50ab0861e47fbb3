package tporigin

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

const crashChildEnv = "TPORIGIN_CRASH_CHILD_DB"

// TestMain runs the test binary as crashChild when
// TestCrashKeepsAcknowledgedOrigins starts it (crashChildEnv set), and as
// the tests otherwise: a child test function would show as a skipped test
// in every ordinary run.
func TestMain(m *testing.M) {
	if path := os.Getenv(crashChildEnv); path != "" {
		crashChild(path)
		return
	}
	os.Exit(m.Run())
}

// crashChild is the child process of TestCrashKeepsAcknowledgedOrigins: it
// records origins from several goroutines, as fast as it can, and prints
// "ack <uid>" for each one only after Record returned, until it is killed.
func crashChild(path string) {
	tr, err := Open(Options{Path: path, Partitions: []string{"tp1", "tp2"}})
	if err != nil {
		fmt.Println("error", err)
		os.Exit(2)
	}
	ctx := context.Background()
	go tr.Run(ctx)
	var outMu sync.Mutex
	out := bufio.NewWriter(os.Stdout)
	fmt.Fprintln(out, "ready", tr.Len())
	out.Flush()
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				uid := fmt.Sprintf("pid%d-w%d-%d", os.Getpid(), w, i)
				tp := "tp1"
				if i%2 == 1 {
					tp = "tp2"
				}
				o := Observation{UID: uid, Kind: KindPod, Partition: tp}
				// Half the writers only queue and let Run commit: the
				// kill then also lands in the middle of timed batches.
				if w%2 == 0 {
					if _, err := tr.Record(ctx, o); err != nil {
						fmt.Println("error", err)
						os.Exit(2)
					}
					outMu.Lock()
					fmt.Fprintln(out, "ack", uid, tp)
					out.Flush()
					outMu.Unlock()
				} else {
					if _, err := tr.Observe(o); err != nil {
						fmt.Println("error", err)
						os.Exit(2)
					}
					// An informer's pace, not a tight loop: batches stay
					// the size a node sees.
					if i%20 == 19 {
						time.Sleep(time.Millisecond)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestCrashKeepsAcknowledgedOrigins kills a writer with SIGKILL in the middle
// of its batches, several times over the same file, and checks that after
// each kill the file opens and holds every origin acknowledged before it.
func TestCrashKeepsAcknowledgedOrigins(t *testing.T) {
	path := filepath.Join(t.TempDir(), "origins.db")
	acked := map[string]string{}
	for round := 0; round < 3; round++ {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), crashChildEnv+"="+path)
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		if !sc.Scan() || !strings.HasPrefix(sc.Text(), "ready ") {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("child did not start: %q", sc.Text())
		}
		// Let the child run well into its batches, then kill it while its
		// writers are mid-commit.
		n := 0
		for n < 300 && sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 || f[0] != "ack" {
				t.Fatalf("child said %q", sc.Text())
			}
			acked[f[1]] = f[2]
			n++
		}
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		// Acks printed before the kill landed are acknowledged too.
		for sc.Scan() {
			if f := strings.Fields(sc.Text()); len(f) == 3 && f[0] == "ack" {
				acked[f[1]] = f[2]
			}
		}
		err = cmd.Wait()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
			t.Fatalf("child ended with %v, want killed by SIGKILL", err)
		}
		if n < 300 {
			t.Fatalf("round %d: child acknowledged only %d origins before stopping", round, n)
		}

		tr, err := Open(Options{Path: path})
		if err != nil {
			t.Fatalf("round %d: file does not open after SIGKILL: %v", round, err)
		}
		missing := 0
		for uid, tp := range acked {
			if got, ok := tr.OriginOf(uid); !ok || got != tp {
				missing++
				if missing < 5 {
					t.Errorf("round %d: acknowledged %s from %s: got %q, %v", round, uid, tp, got, ok)
				}
			}
		}
		if missing > 0 {
			t.Fatalf("round %d: %d of %d acknowledged origins lost", round, missing, len(acked))
		}
		if tr.Len() < len(acked) {
			t.Fatalf("round %d: %d entries < %d acknowledged", round, tr.Len(), len(acked))
		}
		t.Logf("round %d: %d acknowledged, %d in the file (the rest were queued, not acknowledged)", round, len(acked), tr.Len())
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestCorruptFiles(t *testing.T) {
	good := func(t *testing.T, path string, n int) {
		tr := mustOpen(t, Options{Path: path})
		for i := 0; i < n; i++ {
			observe(t, tr, fmt.Sprintf("uid-%06d-%s", i, strings.Repeat("x", 30)), "tp1", "tenant-a", KindPod)
		}
		if err := tr.Close(); err != nil {
			t.Fatal(err)
		}
	}
	boltEdit := func(t *testing.T, path string, fn func(tx *bolt.Tx) error) {
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Update(fn); err != nil {
			t.Fatal(err)
		}
		db.Close()
	}
	cases := []struct {
		name   string
		make   func(t *testing.T, path string)
		reason string
	}{
		{"text file", func(t *testing.T, path string) {
			os.WriteFile(path, []byte(strings.Repeat("not a database\n", 1000)), 0o600)
		}, "not a valid bbolt file"},
		{"truncated bbolt file", func(t *testing.T, path string) {
			good(t, path, 10)
			os.Truncate(path, 100)
		}, "cannot be used"},
		{"another program's bbolt file", func(t *testing.T, path string) {
			boltEdit(t, path, func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("theirs")); return err })
		}, "another program"},
		{"wrong magic", func(t *testing.T, path string) {
			good(t, path, 1)
			boltEdit(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keyMagic, []byte("other")) })
		}, "magic"},
		{"newer schema", func(t *testing.T, path string) {
			good(t, path, 1)
			boltEdit(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bucketMeta).Put(keySchema, []byte("2")) })
		}, "schema version 2"},
		{"missing origins bucket", func(t *testing.T, path string) {
			good(t, path, 1)
			boltEdit(t, path, func(tx *bolt.Tx) error { return tx.DeleteBucket(bucketOrigins) })
		}, "origins bucket is missing"},
		{"record that does not decode", func(t *testing.T, path string) {
			good(t, path, 5)
			boltEdit(t, path, func(tx *bolt.Tx) error { return tx.Bucket(bucketOrigins).Put([]byte("bad"), []byte{1, 200, 'x'}) })
		}, `record "bad" does not decode`},
		{"record with an invalid tenant", func(t *testing.T, path string) {
			good(t, path, 5)
			boltEdit(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket(bucketOrigins).Put([]byte("bad"), encodeRecord(record{kind: KindPod, partition: "tp1", tenant: "Not_A_Label"}))
			})
		}, `record "bad" does not decode`},
		{"record with an invalid partition name", func(t *testing.T, path string) {
			good(t, path, 5)
			boltEdit(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket(bucketOrigins).Put([]byte("bad"), encodeRecord(record{kind: KindPod, partition: "tp\x011", tenant: "acme"}))
			})
		}, `record "bad" does not decode`},
		// Cut after the meta pages: bbolt would map pages the file no
		// longer has, and its first read of one was a SIGBUS.
		{"truncated to 8 KiB", truncatedAt(8 << 10), "truncated"},
		{"truncated to 12 KiB", truncatedAt(12 << 10), "truncated"},
		{"truncated to 16 KiB", truncatedAt(16 << 10), "truncated"},
		{"truncated to 20000 bytes", truncatedAt(20000), "truncated"},
		{"garbage pages", func(t *testing.T, path string) {
			good(t, path, 3000)
			f, err := os.OpenFile(path, os.O_RDWR, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			st, _ := f.Stat()
			page := int64(os.Getpagesize())
			junk := []byte(strings.Repeat("\xa5\x5a", int(page)))
			// Keep the two meta pages, smash every other page.
			for off := 2 * page; off < st.Size(); off += page {
				f.WriteAt(junk[:page], off)
			}
		}, "cannot be used"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "origins.db")
			c.make(t, path)
			// The failed Open leaves no lock behind, even where bbolt
			// panicked: the rebuild below is in the same process.
			_, err := Open(Options{Path: path, LockTimeout: 1e9})
			var ce *CorruptError
			if !errors.As(err, &ce) {
				t.Fatalf("Open = %v, want a *CorruptError", err)
			}
			msg := err.Error()
			for _, want := range []string{path, c.reason, "Options.Rebuild"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not mention %q", msg, want)
				}
			}
			// Rebuild: the bad file is kept aside, the tracker starts
			// empty and works, and the new file reopens.
			tr, err := Open(Options{Path: path, Rebuild: true, LockTimeout: 1e9})
			if err != nil {
				t.Fatalf("Open with Rebuild = %v", err)
			}
			if tr.Len() != 0 {
				t.Fatalf("rebuilt tracker has %d entries", tr.Len())
			}
			aside, _ := filepath.Glob(path + ".corrupt-*")
			if len(aside) != 1 {
				t.Fatalf("bad file not kept aside: %v", aside)
			}
			if _, err := tr.Record(context.Background(), Observation{UID: "u1", Kind: KindPod, Partition: "tp2"}); err != nil {
				t.Fatal(err)
			}
			tr.Close()
			tr2 := mustOpen(t, Options{Path: path})
			wantOrigin(t, tr2, "u1", "tp2")
		})
	}
}

// truncatedAt makes a file of 3000 origins and cuts it to size bytes.
func truncatedAt(size int64) func(t *testing.T, path string) {
	return func(t *testing.T, path string) {
		writeOrigins(t, path, 3000)
		if err := os.Truncate(path, size); err != nil {
			t.Fatal(err)
		}
	}
}

// writeOrigins writes n origins of tp1 to a new file at path.
func writeOrigins(t testing.TB, path string, n int) {
	tr, err := Open(Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		if _, err := tr.Observe(Observation{UID: fmt.Sprintf("uid-%06d-%s", i, strings.Repeat("x", 30)), Kind: KindPod, Partition: "tp1", Tenant: "tenant-a"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestEmptyFileIsNew checks that a zero-length file (a crash before bbolt
// initialised it) is a new database, not an error.
func TestEmptyFileIsNew(t *testing.T) {
	path := filepath.Join(t.TempDir(), "origins.db")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tr := mustOpen(t, Options{Path: path})
	if tr.Len() != 0 {
		t.Fatal("not empty")
	}
}
