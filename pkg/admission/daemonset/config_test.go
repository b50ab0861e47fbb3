package daemonset

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"
)

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestParseConfig(t *testing.T) {
	cases := []struct {
		name    string
		in      io.Reader
		want    Config
		wantErr string
	}{
		{name: "nil reader is Arktos's rule only", in: nil, want: Config{}},
		{name: "empty", in: strings.NewReader(" \n"), want: Config{}},
		{name: "empty object", in: strings.NewReader(`{}`), want: Config{}},
		{name: "admin only", in: strings.NewReader(`{"adminOnly": true}`), want: Config{AdminOnly: true}},
		{name: "groups", in: strings.NewReader(`{"adminOnly": true, "adminGroups": ["system:masters", "ops"]}`),
			want: Config{AdminOnly: true, AdminGroups: []string{"system:masters", "ops"}}},
		{name: "apiVersion and kind are accepted", in: strings.NewReader(`{"apiVersion":"tpkit.dev/v1","kind":"SystemDaemonSetConfiguration","adminOnly":true}`),
			want: Config{AdminOnly: true}},
		{name: "misspelt field", in: strings.NewReader(`{"admin_only": true}`), wantErr: `unknown field "admin_only"`},
		{name: "wrong type", in: strings.NewReader(`{"adminOnly": "yes"}`), wantErr: "SystemDaemonSet configuration"},
		{name: "yaml is not json", in: strings.NewReader("adminOnly: true\n"), wantErr: "SystemDaemonSet configuration"},
		{name: "two documents", in: strings.NewReader(`{"adminOnly": true} {}`), wantErr: "data after the JSON object"},
		{name: "trailing brace", in: strings.NewReader(`{"adminOnly": true}}`), wantErr: "data after the JSON object"},
		{name: "read error", in: failingReader{}, wantErr: "disk on fire"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig(tc.in)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got %+v, %v; want an error containing %q", got, err, tc.wantErr)
				}
				if !reflect.DeepEqual(got, Config{}) {
					t.Fatalf("config %+v returned with an error", got)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}
