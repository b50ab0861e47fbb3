package server

import (
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// fakeClock is a monotonic clock that moves only when told.
type fakeClock struct{ t int64 }

func (c *fakeClock) now() int64              { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t += int64(d) }

// budgetStep is one step of a scenario: advance the clock, then take n
// tokens for src and expect got of them.
type budgetStep struct {
	advance time.Duration
	src     string
	n, got  int
}

func TestSourceBudget(t *testing.T) {
	cases := []struct {
		name  string
		rate  float64
		burst int
		steps []budgetStep
	}{
		{"a new source has its burst", 10, 5, []budgetStep{
			{0, "10.0.0.1", 8, 5},
		}},
		{"refilled at the rate", 10, 5, []budgetStep{
			{0, "10.0.0.1", 5, 5},
			{50 * time.Millisecond, "10.0.0.1", 1, 0},
			{50 * time.Millisecond, "10.0.0.1", 2, 1},
			{time.Second, "10.0.0.1", 20, 5}, // full again, never more than the burst
		}},
		{"an empty bucket is not charged further", 10, 2, []budgetStep{
			{0, "10.0.0.1", 2, 2},
			// A flood meanwhile does not push the next token further off.
			{0, "10.0.0.1", 1000, 0},
			{100 * time.Millisecond, "10.0.0.1", 1, 1},
		}},
		{"while it floods, a source gets the rate", 100, 10, func() []budgetStep {
			s := []budgetStep{{0, "10.0.0.1", 10, 10}}
			for i := 0; i < 10; i++ {
				s = append(s, budgetStep{100 * time.Millisecond, "10.0.0.1", 500, 10})
			}
			return s
		}()},
		{"sources are apart", 1, 2, []budgetStep{
			{0, "10.0.0.1", 10, 2},
			{0, "10.0.0.2", 10, 2},
			{0, "fd00::1", 10, 2},
			{0, "fd00::2", 10, 2},
			{0, "10.0.0.1", 1, 0},
		}},
		{"IPv4 and its mapped form are one source", 1, 1, []budgetStep{
			{0, "10.0.0.1", 1, 1},
			{0, "::ffff:10.0.0.1", 1, 0},
		}},
		{"a quiet client keeps its few names a second through another's flood", 20, 40, func() []budgetStep {
			var s []budgetStep
			for i := 0; i < 50; i++ {
				s = append(s, budgetStep{100 * time.Millisecond, "10.0.0.66", 10000, 2}, // 20/s
					budgetStep{0, "10.0.0.7", 1, 1}) // 10/s, under its budget
			}
			s[0].got = 40 // the flooder's first burst
			return s
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: int64(time.Hour)}
			b := newSourceBudget(tc.rate, tc.burst)
			b.now = clk.now
			for i, st := range tc.steps {
				clk.advance(st.advance)
				src := netip.MustParseAddr(st.src).Unmap()
				got := 0
				for j := 0; j < st.n; j++ {
					if b.take(src) {
						got++
					}
				}
				if got != st.got {
					t.Fatalf("step %d (%s): %d of %d taken, want %d", i, st.src, got, st.n, st.got)
				}
			}
		})
	}
}

// The table is bounded: many more sources than it holds push out the least
// recently seen, and a source pushed out comes back with a full bucket,
// never an empty one.
func TestSourceBudgetTableIsBounded(t *testing.T) {
	clk := &fakeClock{t: int64(time.Hour)}
	b := newSourceBudget(1, 3)
	b.now = clk.now
	quiet := netip.MustParseAddr("10.0.0.7")
	for i := 0; i < 3; i++ {
		if !b.take(quiet) {
			t.Fatalf("quiet source: token %d refused", i)
		}
	}
	if b.take(quiet) {
		t.Fatal("quiet source: a fourth token at once")
	}
	for i := 0; i < 10*budgetSets*budgetWays; i++ {
		clk.advance(time.Microsecond)
		a := netip.AddrFrom4([4]byte{172, 16, byte(i >> 8), byte(i)})
		if i >= 1<<16 {
			a = netip.MustParseAddr(fmt.Sprintf("fd00::%x:%x", i>>16, i&0xffff))
		}
		b.take(a)
	}
	used := 0
	for i := range b.sets {
		for _, e := range b.sets[i].entries {
			if e.used {
				used++
			}
		}
	}
	if used > budgetSets*budgetWays {
		t.Fatalf("%d sources held, want at most %d", used, budgetSets*budgetWays)
	}
	// Pushed out or not, the quiet source is no worse off than it was.
	clk.advance(time.Second)
	if !b.take(quiet) {
		t.Fatal("quiet source: no token a second later")
	}
}

func TestSourceBudgetTakeAllocatesNothing(t *testing.T) {
	b := newSourceBudget(20, 40)
	src := netip.MustParseAddr("10.1.2.3")
	if n := testing.AllocsPerRun(100, func() { b.take(src) }); n != 0 {
		t.Fatalf("take allocates %.1f times", n)
	}
}

// admit drops over MaxConcurrentForwards, and from half of them on, drops
// the sources over their budget only.
func TestAdmitForward(t *testing.T) {
	flooder, quiet := netip.MustParseAddr("10.0.0.66"), netip.MustParseAddr("10.0.0.7")
	cases := []struct {
		name    string
		waiting int // of 10
		// the flooder's queries before, and whether its next, then the
		// quiet client's, is admitted
		flood         int
		flooder, calm bool
		reason        dropReason
	}{
		{"idle pool: everyone", 0, 1000, true, true, 0},
		{"under half: even a flooder", 4, 1000, true, true, 0},
		{"half waiting: a source over budget is dropped", 5, 1000, false, true, dropSource},
		{"half waiting: a source within budget is not", 5, 3, true, true, 0},
		{"all waiting: everyone is dropped", 10, 0, false, false, dropLimit},
		{"one short of all: the last token goes to a source within budget", 9, 0, true, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clk := &fakeClock{t: int64(time.Hour)}
			h, err := New(nil, Options{Zones: []string{"cluster.local"}, Forwarder: &recordingForwarder{}, MaxConcurrentForwards: 10,
				ForwardsPerSource: 2, ForwardBurstPerSource: 4, Metrics: NewMetrics(nil)})
			if err != nil {
				t.Fatal(err)
			}
			h.budget.now = clk.now
			for i := 0; i < tc.waiting; i++ {
				if !h.acquireForward() {
					t.Fatal("pool full too early")
				}
			}
			for i := 0; i < tc.flood; i++ {
				if h.admitForward(flooder, false) == admitHeld {
					h.releaseForward() // answered at once
				}
			}
			reason, ok := h.admit(flooder)
			if ok != tc.flooder || !ok && reason != tc.reason {
				t.Errorf("flooder: admitted %v (%s), want %v (%s)", ok, dropReasonNames[reason], tc.flooder, dropReasonNames[tc.reason])
			}
			if ok && len(h.forwards) != tc.waiting+1 {
				t.Errorf("admitted with %d tokens taken, want %d: the admitted query holds one", len(h.forwards), tc.waiting+1)
			}
			if ok := h.admitForward(quiet, false) == admitHeld; ok != tc.calm {
				t.Errorf("quiet client: admitted %v, want %v", ok, tc.calm)
			}
		})
	}
}
