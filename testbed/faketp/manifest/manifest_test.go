package manifest

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string // kind/name
		err      string
	}{
		{"yaml documents", "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n", []string{"ConfigMap/a", "Pod/b"}, ""},
		{"json values", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}} {"apiVersion":"v1","kind":"Secret","metadata":{"name":"b"}}`, []string{"ConfigMap/a", "Secret/b"}, ""},
		{"list", "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n", []string{"ConfigMap/a", "ConfigMap/b"}, ""},
		{"no metadata", "apiVersion: v1\nkind: Namespace\n", []string{"Namespace/"}, ""},
		{"empty", "", nil, ""},
		{"comments only", "# nothing\n---\n# more\n", nil, ""},
		{"no kind", "apiVersion: v1\nmetadata: {name: a}\n", nil, "document 1: kind"},
		{"no apiVersion", "---\nkind: Pod\n", nil, "apiVersion"},
		{"scalar", "just a string\n", nil, "must be an object"},
		{"bad yaml", "a: [\n", nil, "document 1"},
		{"bad list item", "apiVersion: v1\nkind: List\nitems: [3]\n", nil, "item 0"},
		{"metadata scalar", "apiVersion: v1\nkind: Pod\nmetadata: 3\n", nil, "metadata"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := Decode("f.yaml", []byte(tc.in))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) || !strings.Contains(err.Error(), "f.yaml") {
					t.Fatalf("error %v, want one mentioning %q and the file", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range objs {
				md := o["metadata"].(map[string]any)
				n, _ := md["name"].(string)
				got = append(got, o["kind"].(string)+"/"+n)
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNumbersStayExact(t *testing.T) {
	objs, err := Decode("n.json", []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"},"spec":{"activeDeadlineSeconds":9007199254740993}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(objs[0])
	if !strings.Contains(string(b), "9007199254740993") {
		t.Fatalf("int64 lost precision: %s", b)
	}
}

func TestFiles(t *testing.T) {
	dir := t.TempDir()
	for name, content := range map[string]string{
		"b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n",
		"a.json": `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}}`,
		"c.txt":  "ignored",
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "tp1.yaml"), 0o755); err != nil { // a directory is not a manifest
		t.Fatal(err)
	}
	files, err := Files(dir)
	if err != nil || len(files) != 2 || filepath.Base(files[0]) != "a.json" {
		t.Fatalf("files %v %v", files, err)
	}
	objs, err := ReadFiles(files...)
	if err != nil || len(objs) != 2 {
		t.Fatalf("read %v %v", objs, err)
	}
}

// FuzzDecode: no input panics the decoder; whatever it accepts is well formed.
func FuzzDecode(f *testing.F) {
	for _, s := range []string{
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Pod\n",
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod"}]}`,
		"---\n", "a: [", "{", "[1,2]", "apiVersion: v1\nkind: List\nitems: 3\n", "\xff\xfe", "- a\n- b\n",
		"apiVersion: v1\nkind: Pod\nmetadata:\n  name: &a x\n  labels: *a\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := Decode("fuzz", data)
		if err != nil {
			return
		}
		for _, o := range objs {
			if _, ok := o["apiVersion"].(string); !ok {
				t.Fatalf("accepted an object without apiVersion: %v", o)
			}
			if _, ok := o["metadata"].(map[string]any); !ok {
				t.Fatalf("accepted an object without metadata: %v", o)
			}
			if _, err := json.Marshal(o); err != nil {
				t.Fatalf("accepted an object that does not encode: %v", err)
			}
		}
	})
}
