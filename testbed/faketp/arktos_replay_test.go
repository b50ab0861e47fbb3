package faketp_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/tpkit-dev/tpkit/testbed/faketp"
)

// TestArktosReplay replays every request of the recording of real Arktos
// TPs (testdata/arktos, see its README) against two fake TPs in process, in
// the same order and with the same bodies, read from its capture.sh, and
// compares each answer with the recorded one: HTTP status, the error's
// reason and message, and the JSON's shape (field names, recursively),
// kinds, list contents (tenant/namespace/name of every item) and watch
// event types in order. responses/ is replayed without controllers,
// responses-with-kcm/ with them (the default).
//
// What fake-tp does differently on purpose is listed once, in differences.
func TestArktosReplay(t *testing.T) {
	dir := arktosRecordings(t)
	script, err := os.ReadFile(filepath.Join(dir, "capture.sh"))
	if err != nil {
		t.Fatal(err)
	}
	for _, mode := range []struct {
		dir         string
		controllers []string
	}{{"responses", []string{}}, {"responses-with-kcm", nil}} {
		t.Run(mode.dir, func(t *testing.T) {
			c := faketp.StartT(t, faketp.Options{Partitions: 2, Controllers: mode.controllers, ServiceCIDRs: recordedServiceCIDRs})
			r := &replay{t: t, dir: filepath.Join(dir, mode.dir), kcm: mode.controllers == nil, tps: c.TPs(), vars: map[string]string{}, got: map[string][]byte{}}
			r.run(string(script))
			recorded, _ := filepath.Glob(filepath.Join(r.dir, "*.headers"))
			if r.compared != len(recorded) {
				t.Fatalf("%d recorded answers compared, %d recorded; is capture.sh still what the replay understands?", r.compared, len(recorded))
			}
		})
	}
}

// recordedServiceCIDRs are the recorded TPs' service ranges, as their
// master services 10.0.0.1 and 10.1.0.1 show (samples 34, 84).
var recordedServiceCIDRs = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/16"), netip.MustParsePrefix("10.1.0.0/16")}

// arktosRecordings is where the recordings are: $TPKIT_ARKTOS_RECORDINGS
// (a fresh recording to try, in the layout of testdata/arktos), else
// testdata/arktos, which every checkout has, so that the replay never
// skips.
func arktosRecordings(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("TPKIT_ARKTOS_RECORDINGS"); d != "" {
		if _, err := os.Stat(filepath.Join(d, "capture.sh")); err != nil {
			t.Fatalf("TPKIT_ARKTOS_RECORDINGS=%s: %v", d, err)
		}
		return d
	}
	return recordings
}

// recordings is the recordings' folder in this package's testdata.
const recordings = "testdata/arktos"

// TestArktosRecordingsComplete: testdata/arktos holds capture.sh and both
// modes' answers, so that a copy cut short cannot make the replay compare
// less than was recorded without notice.
func TestArktosRecordingsComplete(t *testing.T) {
	if _, err := os.Stat(filepath.Join(recordings, "capture.sh")); err != nil {
		t.Error(err)
	}
	for _, mode := range []string{"responses", "responses-with-kcm"} {
		headers, err := filepath.Glob(filepath.Join(recordings, mode, "*.headers"))
		if err != nil {
			t.Fatal(err)
		}
		if len(headers) < 50 {
			t.Errorf("%s/%s holds %d recorded answers; the recordings are incomplete", recordings, mode, len(headers))
		}
	}
}

// difference is one thing fake-tp does differently from the recorded
// Arktos on purpose.
type difference struct {
	what, why string
	// paths are the shape paths (see shapeOf) fake-tp may lack or add.
	paths *regexp.Regexp
	// items are list items fake-tp does not have (tenant/namespace/name).
	items []string
	// kcm: only against responses-with-kcm; events: only in watch events.
	kcm, events bool
}

// differences is the one table of intended differences. Values that are
// not compared at all (the test compares shapes, kinds, names, tenants,
// codes and messages) are listed too, so that the table says everything.
var differences = []difference{
	{what: "values: uids, creation and deletion timestamps, hashKey, resourceVersion numbers, cluster IPs, build info, table cell values",
		why: "generated per run by both servers; fake-tp's resourceVersions count from its own start. They are not compared (cluster IPs only by range: fake-tp hands them out in order, Arktos at random), and the numbers in the watch cache's too-old message are masked"},
	{what: "the ServiceAccount admission plugin and controller", kcm: true,
		paths: regexp.MustCompile(`^(\.items\[\])?\.spec\.(volumes|serviceAccount|serviceAccountName|containers\[\]\.volumeMounts)(\.|\[|$)`),
		why:   "fake-tp serves no service accounts, so pods get no service account and no token volume"},
	{what: "metadata.selfLink of events a watch delivers live", events: true, paths: regexp.MustCompile(`^\.metadata\.selfLink$`),
		why: "Arktos's watch cache sets it only on replayed and initial events; fake-tp always does"},
	{what: "the order of a watch's initial ADDED events",
		why: "Arktos's watch cache sends them in its hash order; they are compared as a set"},
	{what: "deleting a pod that is bound to a node",
		why: "fake-tp has no kubelet to wait for: it completes the graceful deletion at once (not exercised by capture.sh, whose deleted pod is unbound)"},
	{what: "discovery of resources fake-tp does not serve",
		why: "fake-tp serves the kinds tpkit reads (tenants, namespaces, pods, services, endpoints, configmaps, secrets, daemonsets); their entries are compared"},
}

// replay runs capture.sh's requests against the fake TPs.
type replay struct {
	t        *testing.T
	dir      string
	kcm      bool
	tps      []*faketp.TP
	vars     map[string]string
	got      map[string][]byte // the fake's answers, by recorded name
	open     []*openWatchStep
	compared int
}

type openWatchStep struct {
	name    string
	res     *http.Response
	initial bool
}

var (
	reFunc   = regexp.MustCompile(`^\w+\(\) \{`)
	reFor    = regexp.MustCompile(`^for (\w+) in \$\(seq (\d+) (\d+)\); do$`)
	reField  = regexp.MustCompile(`^(\w+)=\$\(field (\S+)\.json '\["metadata"\]\["resourceVersion"\]'\)$`)
	reStale  = regexp.MustCompile(`^(\w+)=\$\(python3 -c .*json\.load\(open\('(\S+)\.json'\)\); d\['metadata'\]\['labels'\]\['(\w+)'\]='(\w+)'`)
	reIgnore = regexp.MustCompile(`^(set |[A-Za-z_]+=\$\{|[A-Z][A-Z0-9_]*=|mkdir |cd |: >|printf |w\d+=\$!|sleep |echo |rev=|#)`)
	reRV     = regexp.MustCompile(`[?&]resourceVersion=`)
	rePod    = regexp.MustCompile(`\$\(pod (\S+?)(?: (\S+?))?\)`)
)

// statements joins continued lines and drops comments and blank lines.
func statements(script string) []string {
	var out []string
	cur := ""
	for _, l := range strings.Split(script, "\n") {
		if strings.HasSuffix(l, "\\") {
			cur += strings.TrimSuffix(l, "\\") + " "
			continue
		}
		s := strings.TrimSpace(cur + l)
		cur = ""
		if s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
	}
	return out
}

// run interprets the parts of capture.sh that talk to the TPs: req, curl,
// the churn loop, wait, the etcd compaction; kubectl blocks are skipped.
func (r *replay) run(script string) {
	st := statements(script)
	for i := 0; i < len(st); i++ {
		s := st[i]
		switch {
		case reFunc.MatchString(s) && !strings.HasSuffix(s, "}"): // a function: skip its body
			for i < len(st) && st[i] != "}" {
				i++
			}
		case reFunc.MatchString(s):
		case strings.HasPrefix(s, "if "):
			// Only the etcd compaction block talks to the TPs.
			if !strings.Contains(s, "ETCD0") {
				for depth := 1; depth > 0; {
					i++
					switch {
					case strings.HasPrefix(st[i], "if "):
						depth++
					case st[i] == "fi":
						depth--
					}
				}
			}
		case s == "fi":
		case strings.HasPrefix(s, "ETCDCTL_API=3 etcdctl") && strings.Contains(s, " compact "):
			r.tps[0].Compact() // TP.Compact is the etcd compaction
		case reFor.MatchString(s):
			m := reFor.FindStringSubmatch(s)
			from, _ := strconv.Atoi(m[2])
			to, _ := strconv.Atoi(m[3])
			var body []string
			for i++; st[i] != "done"; i++ {
				body = append(body, st[i])
			}
			for n := from; n <= to; n++ {
				r.vars[m[1]] = strconv.Itoa(n)
				for _, b := range body {
					r.command(b)
				}
			}
		case reField.MatchString(s):
			m := reField.FindStringSubmatch(s)
			r.vars[m[1]] = jsonAt(r.t, r.gotOf(m[2]), "metadata.resourceVersion")
		case reStale.MatchString(s):
			m := reStale.FindStringSubmatch(s)
			var o map[string]any
			if err := json.Unmarshal(r.gotOf(m[2]), &o); err != nil {
				r.t.Fatal(err)
			}
			o["metadata"].(map[string]any)["labels"].(map[string]any)[m[3]] = m[4]
			b, _ := json.Marshal(o)
			r.vars[m[1]] = string(b)
		case strings.HasPrefix(s, "wait "):
			r.closeWatches()
		case strings.HasPrefix(s, "req "), strings.HasPrefix(s, "curl "):
			r.command(s)
		case reIgnore.MatchString(s):
		default:
			r.t.Fatalf("capture.sh: a statement the replay does not understand: %s", s)
		}
	}
	if len(r.open) > 0 {
		r.t.Fatalf("watches never closed: %d", len(r.open))
	}
}

func (r *replay) gotOf(name string) []byte {
	b, ok := r.got[name]
	if !ok {
		r.t.Fatalf("capture.sh refers to %s before it was requested", name)
	}
	return b
}

// words splits a shell command into words: single quotes literal, double
// quotes with ${VAR} and $(pod NAME [TENANT]) expanded; ${A}/${B} become
// "@0"/"@1", the TP.
func (r *replay) words(s string) []string {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			var raw strings.Builder
			for i++; s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
				raw.WriteByte(s[i])
			}
			cur.WriteString(r.expand(raw.String()))
			inWord = true
		case c == ' ':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out
}

var reVar = regexp.MustCompile(`\$\{(\w+)\}`)

func (r *replay) expand(s string) string {
	s = rePod.ReplaceAllStringFunc(s, func(m string) string {
		p := rePod.FindStringSubmatch(m)
		tenant := ""
		if p[2] != "" {
			tenant = `,"tenant":"` + p[2] + `"`
		}
		// capture.sh's pod().
		return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + p[1] + `"` + tenant + `,"labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1.19","ports":[{"containerPort":80}]}]}}`
	})
	return reVar.ReplaceAllStringFunc(s, func(m string) string {
		switch v := reVar.FindStringSubmatch(m)[1]; v {
		case "A":
			return "@0"
		case "B":
			return "@1"
		default:
			val, ok := r.vars[v]
			if !ok && v != "UA" {
				r.t.Fatalf("capture.sh uses ${%s}, which the replay does not know", v)
			}
			return val
		}
	})
}

// request is one HTTP request of capture.sh.
type request struct {
	name, method, url, body, ct, accept string
	background                          bool
}

// command runs a req or curl command.
func (r *replay) command(s string) {
	w := r.words(s)
	var q request
	switch w[0] {
	case "req": // req NAME METHOD URL [BODY] [CONTENT-TYPE]
		q = request{name: w[1], method: w[2], url: w[3], ct: "application/json"}
		if len(w) > 4 {
			q.body = w[4]
		}
		if len(w) > 5 {
			q.ct = w[5]
		}
	case "curl":
		q.method = "GET"
		for i := 1; i < len(w); i++ {
			switch {
			case w[i] == "-X":
				q.method = w[i+1]
				i++
			case w[i] == "-H":
				k, v, _ := strings.Cut(w[i+1], ": ")
				switch strings.ToLower(k) {
				case "accept":
					q.accept = v
				case "content-type":
					q.ct = v
				}
				i++
			case w[i] == "-D":
				q.name = strings.TrimSuffix(w[i+1], ".headers")
				i++
			case w[i] == "-d":
				q.body = w[i+1]
				i++
			case w[i] == "-A", w[i] == "-o":
				i++
			case strings.HasPrefix(w[i], "@"):
				q.url = w[i]
			case w[i] == "&":
				q.background = true
			}
		}
	}
	tp := r.tps[0]
	if strings.HasPrefix(q.url, "@1") {
		tp = r.tps[1]
	}
	path := q.url[2:]
	req, err := http.NewRequest(q.method, tp.URL()+path, strings.NewReader(q.body))
	if err != nil {
		r.t.Fatal(err)
	}
	if q.body != "" {
		req.Header.Set("Content-Type", q.ct)
	}
	req.Header.Set("Accept", "application/json")
	if q.accept != "" {
		req.Header.Set("Accept", q.accept)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		r.t.Fatalf("%s: %v", q.name, err)
	}
	watch := strings.Contains(path, "watch=1")
	ws := &openWatchStep{name: q.name, res: res, initial: !reRV.MatchString(path)}
	switch {
	case watch && q.background:
		r.open = append(r.open, ws)
	case watch:
		// A watch on its own: end it once it has sent what exists.
		tp.CloseWatches()
		r.compareWatch(ws)
	default:
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if q.name != "" {
			r.got[q.name] = b
			r.compareAnswer(q.name, res.StatusCode, b)
		}
	}
}

// closeWatches ends the background watches (capture.sh's wait) and
// compares what they got.
func (r *replay) closeWatches() {
	for _, tp := range r.tps {
		tp.CloseWatches()
	}
	for _, w := range r.open {
		r.compareWatch(w)
	}
	r.open = nil
}

// recorded reads NAME.headers (status code) and the body.
func (r *replay) recorded(name string) (int, []byte) {
	h, err := os.ReadFile(filepath.Join(r.dir, name+".headers"))
	if err != nil {
		r.t.Fatalf("%s: %v", name, err)
	}
	f := strings.Fields(strings.SplitN(string(h), "\n", 2)[0])
	code, _ := strconv.Atoi(f[1])
	for _, ext := range []string{".json", ".jsonl"} {
		if b, err := os.ReadFile(filepath.Join(r.dir, name+ext)); err == nil {
			return code, b
		}
	}
	r.t.Fatalf("%s: no body file", name)
	return 0, nil
}

func (r *replay) errorf(name, format string, args ...any) {
	r.t.Helper()
	r.t.Errorf("%s: "+format, append([]any{name}, args...)...)
}

// compareAnswer compares a plain (not watch) answer.
func (r *replay) compareAnswer(name string, code int, got []byte) {
	r.compared++
	wantCode, want := r.recorded(name)
	if code != wantCode {
		r.errorf(name, "HTTP %d, Arktos %d\n got  %s\n want %s", code, wantCode, cut(got), cut(want))
		return
	}
	var w, g map[string]any
	if err := json.Unmarshal(want, &w); err != nil {
		r.t.Fatalf("%s: recorded body: %v", name, err)
	}
	if err := json.Unmarshal(got, &g); err != nil {
		r.errorf(name, "not JSON: %v: %s", err, cut(got))
		return
	}
	r.compareObject(name, w, g, false)
}

// compareObject compares one JSON document of any kind.
func (r *replay) compareObject(name string, w, g map[string]any, event bool) {
	switch {
	case w["kind"] == "Status":
		for _, f := range []string{"status", "reason", "code", "details"} {
			if !jsonEqual(w[f], g[f]) {
				r.errorf(name, "Status %s: %v, Arktos %v", f, g[f], w[f])
			}
		}
		wmsg, gmsg := fmt.Sprint(w["message"]), fmt.Sprint(g["message"])
		if event { // the watch cache's "too old resource version: X (Y)"
			wmsg, gmsg = maskNumbers(wmsg), maskNumbers(gmsg)
		}
		if wmsg != gmsg {
			r.errorf(name, "message %q, Arktos %q", g["message"], w["message"])
		}
	case w["kind"] == "APIResourceList":
		r.compareDiscovery(name, w, g)
	case w["major"] != nil:
		if g["major"] != w["major"] || g["minor"] != w["minor"] || !strings.HasPrefix(fmt.Sprint(g["gitVersion"]), "v1.0.0-arktos") {
			r.errorf(name, "version %v.%v %v, Arktos %v.%v", g["major"], g["minor"], g["gitVersion"], w["major"], w["minor"])
		}
		r.compareShape(name, "", w, g, event)
	case w["kind"] == "Table":
		r.compareTable(name, w, g)
	case w["items"] != nil:
		r.compareList(name, w, g)
	default:
		if w["kind"] != g["kind"] || w["apiVersion"] != g["apiVersion"] || identity(w) != identity(g) {
			r.errorf(name, "object %v %v %s, Arktos %v %v %s", g["kind"], g["apiVersion"], identity(g), w["kind"], w["apiVersion"], identity(w))
		}
		r.compareShape(name, "", w, g, event)
		r.compareClusterIP(name, w, g)
	}
}

// compareClusterIP checks that a service's cluster IP is in the range of
// the recorded one.
func (r *replay) compareClusterIP(name string, w, g map[string]any) {
	ip := func(o map[string]any) netip.Addr {
		spec, _ := o["spec"].(map[string]any)
		s, _ := spec["clusterIP"].(string)
		a, _ := netip.ParseAddr(s)
		return a
	}
	for _, p := range recordedServiceCIDRs {
		if p.Contains(ip(w)) && !p.Contains(ip(g)) {
			r.errorf(name, "cluster IP %v, Arktos %v: not in %s", ip(g), ip(w), p)
		}
	}
}

// identity is an object's tenant/namespace/name.
func identity(o map[string]any) string {
	md, _ := o["metadata"].(map[string]any)
	return fmt.Sprintf("%v/%v/%v", orEmpty(md["tenant"]), orEmpty(md["namespace"]), orEmpty(md["name"]))
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}

// compareList compares kinds, the items (by identity, after the known
// differences) and each item's shape.
func (r *replay) compareList(name string, w, g map[string]any) {
	if w["kind"] != g["kind"] || w["apiVersion"] != g["apiVersion"] {
		r.errorf(name, "list %v %v, Arktos %v %v", g["kind"], g["apiVersion"], w["kind"], w["apiVersion"])
	}
	r.compareShape(name, "", map[string]any{"metadata": w["metadata"]}, map[string]any{"metadata": g["metadata"]}, false)
	byID := func(l any) map[string]map[string]any {
		out := map[string]map[string]any{}
		items, _ := l.([]any)
		for _, it := range items {
			o, _ := it.(map[string]any)
			if id := identity(o); !r.absent(id) {
				out[id] = o
			}
		}
		return out
	}
	wi, gi := byID(w["items"]), byID(g["items"])
	if ids(wi) != ids(gi) {
		r.errorf(name, "items %s, Arktos %s", ids(gi), ids(wi))
		return
	}
	for id, wo := range wi {
		r.compareShape(name+" "+id, ".items[]", wo, gi[id], false)
		r.compareClusterIP(name+" "+id, wo, gi[id])
	}
}

func ids(m map[string]map[string]any) string {
	var out []string
	for id := range m {
		out = append(out, id)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

// absent says whether fake-tp lacks the item on purpose.
func (r *replay) absent(id string) bool {
	for _, d := range differences {
		if (!d.kcm || r.kcm) && slices.Contains(d.items, id) {
			return true
		}
	}
	return false
}

// compareShape compares the field names of two objects, recursively.
func (r *replay) compareShape(name, prefix string, w, g map[string]any, event bool) {
	ws, gs := map[string]bool{}, map[string]bool{}
	shapeOf(w, "", ws)
	shapeOf(g, "", gs)
	var missing, extra []string
	for p := range ws {
		if !gs[p] && !r.ignored(prefix+p, event) {
			missing = append(missing, p)
		}
	}
	for p := range gs {
		if !ws[p] && !r.ignored(prefix+p, event) {
			extra = append(extra, p)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		r.errorf(name, "shape: fake-tp lacks %v, has more %v", missing, extra)
	}
	wm, _ := w["metadata"].(map[string]any)
	gm, _ := g["metadata"].(map[string]any)
	if wm != nil && gm != nil && !jsonEqual(wm["tenant"], gm["tenant"]) {
		r.errorf(name, "metadata.tenant %v, Arktos %v", gm["tenant"], wm["tenant"])
	}
}

func (r *replay) ignored(path string, event bool) bool {
	for _, d := range differences {
		if d.paths != nil && (!d.kcm || r.kcm) && (!d.events || event) && d.paths.MatchString(path) {
			return true
		}
	}
	return false
}

// shapeOf collects the field paths of v: ".spec.containers[].name".
func shapeOf(v any, prefix string, out map[string]bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			p := prefix + "." + k
			out[p] = true
			shapeOf(x, p, out)
		}
	case []any:
		for _, x := range t {
			shapeOf(x, prefix+"[]", out)
		}
	}
}

var digits = regexp.MustCompile(`[0-9]+`)

// maskNumbers hides resourceVersion numbers in messages (a difference).
func maskNumbers(s string) string { return digits.ReplaceAllString(s, "N") }

// compareDiscovery compares the entries of the resources fake-tp serves;
// every one of them must be in the recording.
func (r *replay) compareDiscovery(name string, w, g map[string]any) {
	if w["apiVersion"] != g["apiVersion"] || w["groupVersion"] != g["groupVersion"] {
		r.errorf(name, "discovery %v %v, Arktos %v %v", g["apiVersion"], g["groupVersion"], w["apiVersion"], w["groupVersion"])
	}
	entries := func(o map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		l, _ := o["resources"].([]any)
		for _, e := range l {
			m, _ := e.(map[string]any)
			out[fmt.Sprint(m["name"])] = m
		}
		return out
	}
	we, ge := entries(w), entries(g)
	for n, gm := range ge {
		wm, ok := we[n]
		if !ok {
			r.errorf(name, "fake-tp serves %s, which Arktos does not", n)
			continue
		}
		for _, f := range []string{"namespaced", "tenanted", "kind", "verbs", "shortNames", "categories", "singularName", "storageVersionHash"} {
			if !jsonEqual(wm[f], gm[f]) {
				r.errorf(name, "%s %s: %v, Arktos %v", n, f, gm[f], wm[f])
			}
		}
		r.compareShape(name+" "+n, "", wm, gm, false)
	}
}

// compareTable compares a Table's columns, rows and their objects.
func (r *replay) compareTable(name string, w, g map[string]any) {
	if w["apiVersion"] != g["apiVersion"] {
		r.errorf(name, "Table %v, Arktos %v", g["apiVersion"], w["apiVersion"])
	}
	cols := func(o map[string]any) string {
		var out []string
		l, _ := o["columnDefinitions"].([]any)
		for _, c := range l {
			m, _ := c.(map[string]any)
			out = append(out, fmt.Sprintf("%v:%v:%v:%v", m["name"], m["type"], m["format"], m["priority"]))
		}
		return strings.Join(out, " ")
	}
	if cols(w) != cols(g) {
		r.errorf(name, "columns %s, Arktos %s", cols(g), cols(w))
	}
	rows := func(o map[string]any) map[string]map[string]any {
		out := map[string]map[string]any{}
		l, _ := o["rows"].([]any)
		for _, row := range l {
			m, _ := row.(map[string]any)
			obj, _ := m["object"].(map[string]any)
			out[identity(obj)] = m
		}
		return out
	}
	wr, gr := rows(w), rows(g)
	if ids(wr) != ids(gr) {
		r.errorf(name, "rows %s, Arktos %s", ids(gr), ids(wr))
		return
	}
	for id, row := range wr {
		r.compareShape(name+" "+id, "", row, gr[id], false)
	}
	r.compareShape(name, "", map[string]any{"metadata": w["metadata"]}, map[string]any{"metadata": g["metadata"]}, false)
}

// compareWatch reads a watch to its end and compares its events: types
// and objects in order, or as a set for the initial events of a watch
// without a resourceVersion (a difference).
func (r *replay) compareWatch(w *openWatchStep) {
	r.compared++
	name, res := w.name, w.res
	defer res.Body.Close()
	wantCode, want := r.recorded(name)
	got, _ := io.ReadAll(res.Body)
	if res.StatusCode != wantCode || res.Header.Get("Content-Type") != "application/json" || !slices.Contains(res.TransferEncoding, "chunked") {
		r.errorf(name, "watch answer %d %q %v, Arktos %d, chunked application/json", res.StatusCode, res.Header.Get("Content-Type"), res.TransferEncoding, wantCode)
		return
	}
	type event struct {
		Type   string
		Object map[string]any
	}
	events := func(b []byte) (out []event) {
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var e event
			if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
				r.errorf(name, "event %q: %v", sc.Text(), err)
			}
			out = append(out, e)
		}
		if w.initial {
			sort.Slice(out, func(i, j int) bool { return identity(out[i].Object) < identity(out[j].Object) })
		}
		return out
	}
	seq := func(evs []event) (out []string) {
		for _, e := range evs {
			out = append(out, e.Type+" "+identity(e.Object))
		}
		return out
	}
	we, ge := events(want), events(got)
	if ws, gs := seq(we), seq(ge); !slices.Equal(ws, gs) {
		r.errorf(name, "events\n got  %v\n want %v", gs, ws)
		return
	}
	for i, e := range we {
		if e.Type == "ERROR" {
			r.compareObject(name, e.Object, ge[i].Object, true)
			continue
		}
		r.compareShape(fmt.Sprintf("%s #%d %s %s", name, i, e.Type, identity(e.Object)), "", e.Object, ge[i].Object, true)
	}
}

func cut(b []byte) string {
	if len(b) > 400 {
		return string(b[:400]) + "..."
	}
	return string(b)
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}
