// Command origin drives the TP-origin file (pkg/tporigin) of make
// bench-origin the way a patched Arktos kubelet does, on a real file with
// real fsyncs, at a node's worst case: --pods pods, replaced one at a time.
//
// The kubelet's calls (arktos/patches 0002, 0004, 0025): a tracker opened
// with the node's TP names and no batch delay, its Run loop committing in
// the background; a pod source's update records each pod
// (ClientChooser.Record, in podStorage.merge), then podStorage.Merge calls
// Flush and waits for it before handing the pods on; a removed pod is
// forgotten by the sync loop (HandlePodRemoves -> ClientChooser.Forget),
// with no flush of its own: Run commits it. A replacement here is that
// Forget of an old UID followed at once by the Record and the Flush of a new
// one, so the Flush often finds Run committing the Forget and waits for that
// commit and then its own: the worst case.
//
// Two phases, each on a fresh file in a temp dir under --dir:
//   - paced: --rate replacements per second for --duration; prints the
//     Flush latency (count, p50, p99, max) and the tracker's commit count;
//   - unpaced: --replacements replacements as fast as they go (36,000 is an
//     hour at 10/s); prints the file's size before and after, and after a
//     close and reopen: apparent size, disk blocks, bbolt's high-water mark
//     and the free pages in it, and the live data (the pages the buckets
//     hold), and the replacement rate.
//
// --batch-delay sets the tracker's BatchDelay, which the kubelet leaves at
// zero: with it, Run waits before committing a Forget, and the Flush that
// follows commits both in one.
//
// It exits 1 when the file's high-water mark after the unpaced phase is more
// than --max-growth times the live data (and more than 1 MiB): an unbounded
// file.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"flag"
	"fmt"
	"io/ioutil"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/tpkit-dev/tpkit/pkg/tporigin"
)

func main() {
	dir := flag.String("dir", os.TempDir(), "Parent of the temp dir the file is made in; its filesystem is reported.")
	pods := flag.Int("pods", 110, "Pods on the node (the kubelet's default --max-pods).")
	tps := flag.Int("partitions", 2, "Tenant partitions of the node; pods are spread over them.")
	rate := flag.Float64("rate", 10, "Replacements per second in the paced phase.")
	duration := flag.Duration("duration", 60*time.Second, "Length of the paced phase; 0 skips it.")
	replacements := flag.Int("replacements", 36000, "Replacements in the unpaced phase (36,000: an hour at 10/s); 0 skips it.")
	batchDelay := flag.Duration("batch-delay", 0, "The tracker's BatchDelay: how long Run waits after a change before committing it (the kubelet sets none).")
	maxGrowth := flag.Float64("max-growth", 4, "Fail when the file's high-water mark exceeds this many times the live data (and 1 MiB).")
	flag.Parse()
	if *pods < 1 || *tps < 1 || *rate <= 0 || *duration < 0 || *replacements < 0 || *maxGrowth <= 1 || *batchDelay < 0 {
		fail(fmt.Errorf("--pods and --partitions must be at least 1, --rate above 0, --duration, --replacements and --batch-delay at least 0, --max-growth above 1"))
	}
	c := config{pods: *pods, partitions: *tps, batchDelay: *batchDelay}
	// Interrupted, the phases stop and remove their temp dirs.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("filesystem of %s: %s; batch delay %v\n", *dir, fsType(*dir), *batchDelay)
	ok := true
	if *duration > 0 {
		if err := paced(ctx, *dir, c, *rate, *duration); err != nil {
			fail(err)
		}
	}
	if *replacements > 0 {
		bounded, err := unpaced(ctx, *dir, c, *replacements, *maxGrowth)
		if err != nil {
			fail(err)
		}
		ok = ok && bounded
	}
	if !ok {
		os.Exit(1)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "origin:", err)
	os.Exit(2)
}

// config is the node's shape.
type config struct {
	pods, partitions int
	batchDelay       time.Duration
}

// node is a kubelet's tracker with its pods and Run loop.
type node struct {
	c       config
	path    string
	tracker *tporigin.Tracker
	chooser *tporigin.ClientChooser
	stop    context.CancelFunc
	done    chan struct{}
	pods    []tporigin.PodRef // the live pods, oldest first
	tps     []int             // pods[i] came from client tps[i]
	next    int               // pods made so far, for their TP
}

// open opens the tracker as the kubelet does (patch 0002: names per TP,
// Rebuild, no batch delay unless c says) and starts its Run loop.
func open(path string, c config) (*node, error) {
	names := make([]string, c.partitions)
	for i := range names {
		names[i] = fmt.Sprintf("tp%d", i)
	}
	t, err := tporigin.Open(tporigin.Options{Path: path, Partitions: names, Rebuild: true, BatchDelay: c.batchDelay})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	n := &node{c: c, path: path, tracker: t, chooser: tporigin.NewClientChooser(t), stop: cancel, done: make(chan struct{})}
	go func() {
		t.Run(ctx)
		close(n.done)
	}()
	return n, nil
}

func (n *node) close() error {
	n.stop()
	<-n.done
	return n.tracker.Close()
}

// add records a new pod from the next TP in turn, as podStorage.merge does
// for an ADD, and returns how long the Flush that Merge then waits for took.
func (n *node) add() (time.Duration, error) {
	tp := n.next % n.c.partitions
	n.next++
	pod := tporigin.PodRef{UID: newUID(), Tenant: fmt.Sprintf("tenant-%d", tp), Namespace: "default", Name: fmt.Sprintf("pod-%d", n.next)}
	if _, err := n.chooser.Record(pod, tp); err != nil {
		return 0, err
	}
	start := time.Now()
	if err := n.tracker.Flush(context.Background()); err != nil {
		return 0, err
	}
	d := time.Since(start)
	n.pods = append(n.pods, pod)
	n.tps = append(n.tps, tp)
	return d, nil
}

// replace forgets the oldest pod (HandlePodRemoves, committed by Run) and
// adds a new one; it returns the new pod's Flush time.
func (n *node) replace() (time.Duration, error) {
	removed, err := n.chooser.Forget(n.pods[0], n.tps[0])
	if err != nil {
		return 0, err
	}
	if !removed {
		return 0, fmt.Errorf("pod %s was not forgotten", n.pods[0])
	}
	n.pods, n.tps = n.pods[1:], n.tps[1:]
	return n.add()
}

func (n *node) fill() error {
	for len(n.pods) < n.c.pods {
		if _, err := n.add(); err != nil {
			return err
		}
	}
	return nil
}

func newUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on Linux
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func tempFile(dir string) (string, func(), error) {
	d, err := ioutil.TempDir(dir, "tpkit-bench-origin-")
	if err != nil {
		return "", nil, err
	}
	return filepath.Join(d, "tporigin.db"), func() { os.RemoveAll(d) }, nil
}

func paced(ctx context.Context, dir string, c config, rate float64, duration time.Duration) error {
	path, cleanup, err := tempFile(dir)
	if err != nil {
		return err
	}
	defer cleanup()
	n, err := open(path, c)
	if err != nil {
		return err
	}
	defer n.close()
	if err := n.fill(); err != nil {
		return err
	}
	before := n.tracker.Stats().Commits
	interval := time.Duration(float64(time.Second) / rate)
	var lat []time.Duration
	late := 0
	start := time.Now()
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if due.Sub(start) >= duration {
			break
		}
		if wait := time.Until(due); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
				return ctx.Err()
			}
		} else if -wait > interval {
			late++ // the previous replacement overran its slot
		}
		d, err := n.replace()
		if err != nil {
			return err
		}
		lat = append(lat, d)
	}
	st := n.tracker.Stats()
	fmt.Printf("paced: %d pods, %d replacements at %g/s over %v: Flush p50 %v p99 %v max %v; %d commits (%.2f per replacement); %d replacements started late\n",
		c.pods, len(lat), rate, duration, pct(lat, 50), pct(lat, 99), pct(lat, 100), st.Commits-before, float64(st.Commits-before)/float64(len(lat)), late)
	return nil
}

func unpaced(ctx context.Context, dir string, c config, count int, maxGrowth float64) (bool, error) {
	path, cleanup, err := tempFile(dir)
	if err != nil {
		return false, err
	}
	defer cleanup()
	n, err := open(path, c)
	if err != nil {
		return false, err
	}
	if err := n.fill(); err != nil {
		return false, err
	}
	if err := n.close(); err != nil {
		return false, err
	}
	before, err := measure(path)
	if err != nil {
		return false, err
	}
	fmt.Printf("unpaced: before, %d pods:            %v\n", c.pods, before)
	if err := n.reopen(); err != nil {
		return false, err
	}
	var lat []time.Duration
	start := time.Now()
	for i := 0; i < count; i++ {
		if err := ctx.Err(); err != nil {
			n.close()
			return false, err
		}
		d, err := n.replace()
		if err != nil {
			return false, err
		}
		lat = append(lat, d)
	}
	elapsed := time.Since(start)
	st := n.tracker.Stats()
	size, blocks, err := fileSize(path)
	if err != nil {
		return false, err
	}
	fmt.Printf("unpaced: %d replacements in %v (%.0f/s, %d commits); Flush p50 %v p99 %v max %v\n",
		count, elapsed.Round(time.Millisecond), float64(count)/elapsed.Seconds(), st.Commits, pct(lat, 50), pct(lat, 99), pct(lat, 100))
	fmt.Printf("unpaced: after, open:               size %s, on disk %s\n", mib(size), mib(blocks))
	if err := n.close(); err != nil {
		return false, err
	}
	after, err := measure(path)
	if err != nil {
		return false, err
	}
	fmt.Printf("unpaced: after, closed:             %v\n", after)
	if n, err = open(path, c); err != nil {
		return false, err
	}
	if got := n.tracker.Len(); got != c.pods {
		n.close()
		return false, fmt.Errorf("reopened file holds %d origins, want %d", got, c.pods)
	}
	if err := n.close(); err != nil {
		return false, err
	}
	reopened, err := measure(path)
	if err != nil {
		return false, err
	}
	fmt.Printf("unpaced: after reopen and close:    %v\n", reopened)
	bounded := float64(after.highWater) <= maxGrowth*float64(after.live) || after.highWater <= 1<<20
	if !bounded {
		fmt.Printf("FAIL: the file's high-water mark %s is more than %g times its live data %s\n", mib(after.highWater), maxGrowth, mib(after.live))
	}
	return bounded, nil
}

// reopen opens the closed file again, keeping the node's pods: a kubelet
// restart, whose origins come back from the file.
func (n *node) reopen() error {
	m, err := open(n.path, n.c)
	if err != nil {
		return err
	}
	n.tracker, n.chooser, n.stop, n.done = m.tracker, m.chooser, m.stop, m.done
	return nil
}

// sizes describe a closed file.
type sizes struct {
	size, blocks int64 // apparent size and disk blocks, in bytes
	highWater    int64 // bbolt's pages in use or free: the file it needs
	free         int64 // free and pending pages within highWater, in bytes
	live         int64 // pages the buckets hold (branch + leaf), in bytes
	pageSize     int
}

func (s sizes) String() string {
	return fmt.Sprintf("size %s, on disk %s, bbolt high-water %s (%d pages of %d B), free pages %s, live data %s (%.1fx)",
		mib(s.size), mib(s.blocks), mib(s.highWater), s.highWater/int64(s.pageSize), s.pageSize, mib(s.free), mib(s.live), float64(s.highWater)/float64(s.live))
}

func measure(path string) (sizes, error) {
	var s sizes
	var err error
	if s.size, s.blocks, err = fileSize(path); err != nil {
		return s, err
	}
	// Read-write, as the tracker opens it: bbolt loads the freelist only
	// then. Nothing is written.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistMapType})
	if err != nil {
		return s, err
	}
	defer db.Close()
	s.pageSize = db.Info().PageSize
	st := db.Stats()
	s.free = int64(st.FreePageN+st.PendingPageN) * int64(s.pageSize)
	err = db.View(func(tx *bolt.Tx) error {
		s.highWater = tx.Size()
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			bs := b.Stats()
			s.live += int64(bs.BranchPageN+bs.LeafPageN+bs.BranchOverflowN+bs.LeafOverflowN) * int64(s.pageSize)
			return nil
		})
	})
	// Meta pages, the root and the freelist are part of any file.
	s.live += 4 * int64(s.pageSize)
	return s, err
}

func fileSize(path string) (size, blocks int64, err error) {
	fi, err := os.Stat(path)
	if err != nil {
		return 0, 0, err
	}
	size = fi.Size()
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		blocks = st.Blocks * 512
	}
	return size, blocks, nil
}

func mib(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(b)/1024)
	}
	return fmt.Sprintf("%.2f MiB", float64(b)/(1<<20))
}

// pct is the p-th percentile of ds (100: the max), by the nearest rank.
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := int(float64(len(s))*p/100+0.999999) - 1
	if i < 0 {
		i = 0
	}
	if i >= len(s) {
		i = len(s) - 1
	}
	return s[i].Round(10 * time.Microsecond)
}

// fsType names the filesystem of dir from statfs's magic number.
func fsType(dir string) string {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return "unknown (" + err.Error() + ")"
	}
	names := map[int64]string{0xEF53: "ext4", 0x01021994: "tmpfs", 0x794c7630: "overlay", 0x58465342: "xfs", 0x9123683E: "btrfs"}
	if name, ok := names[int64(st.Type)]; ok {
		return name
	}
	return fmt.Sprintf("magic %#x", st.Type)
}
