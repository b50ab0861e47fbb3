package faketp

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// AdminHandler serves the fault controls of c over HTTP, for harnesses that
// run fake-tp as a program. It must only be served on loopback: it has no
// authentication. Routes (all POST except the listing):
//
//	GET  /tps                                  the TPs, their URLs, kubeconfigs and faults
//	POST /tps/{name}/outage?mode=refuse|503|none
//	POST /tps/{name}/close-watches
//	POST /tps/{name}/latency?duration=250ms    (0 removes it)
//	POST /tps/{name}/compact
//	POST /tps/{name}/restart
func AdminHandler(c *Cluster) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rest := strings.Trim(strings.TrimPrefix(r.URL.Path, "/tps"), "/")
		if rest == "" {
			if r.Method != http.MethodGet {
				http.Error(w, "use GET", http.StatusMethodNotAllowed)
				return
			}
			type tpInfo struct {
				Name       string `json:"name"`
				URL        string `json:"url"`
				Kubeconfig string `json:"kubeconfig"`
				Outage     string `json:"outage"`
				Latency    string `json:"latency"`
				RV         uint64 `json:"resourceVersion"`
			}
			var out []tpInfo
			for _, tp := range c.tps {
				info := tpInfo{Name: tp.name, URL: tp.URL(), Kubeconfig: tp.KubeconfigPath(), Outage: tp.OutageMode().String(), Latency: time.Duration(tp.latency.Load()).String()}
				if s := tp.Store(); s != nil {
					info.RV = s.RV()
				}
				out = append(out, info)
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(out)
			return
		}
		name, action, _ := strings.Cut(rest, "/")
		tp := c.TP(name)
		if tp == nil {
			http.Error(w, fmt.Sprintf("no TP named %q", name), http.StatusNotFound)
			return
		}
		if r.Method != http.MethodPost {
			http.Error(w, "use POST", http.StatusMethodNotAllowed)
			return
		}
		q := r.URL.Query()
		var err error
		switch action {
		case "outage":
			var o Outage
			if o, err = ParseOutage(q.Get("mode")); err == nil {
				err = tp.SetOutage(r.Context(), o)
			}
		case "close-watches":
			tp.CloseWatches()
		case "latency":
			var d time.Duration
			if d, err = time.ParseDuration(q.Get("duration")); err == nil && d < 0 {
				err = fmt.Errorf("negative duration")
			}
			if err == nil {
				tp.SetLatency(d)
			}
		case "compact":
			tp.Compact()
		case "restart":
			err = tp.Restart(r.Context())
		default:
			http.Error(w, fmt.Sprintf("unknown action %q", action), http.StatusNotFound)
			return
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "ok\n")
	})
}

// OutageMode returns the TP's injected outage.
func (tp *TP) OutageMode() Outage {
	if o := Outage(tp.outage.Load()); o != OutageNone {
		return o
	}
	tp.mu.Lock()
	defer tp.mu.Unlock()
	if !tp.running && tp.kcPath != "" {
		return OutageRefuse
	}
	return OutageNone
}
