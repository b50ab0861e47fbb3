package manifest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Object is one decoded manifest object.
type Object = map[string]any

// Decode reads every object in data. name is used in error messages only.
func Decode(name string, data []byte) ([]Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []Object
	for doc := 1; ; doc++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", name, doc, err)
		}
		raw = bytes.TrimSpace(raw)
		if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
			continue // an empty document, as "---" at the start gives
		}
		objs, err := decodeDocument(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %v", name, doc, err)
		}
		out = append(out, objs...)
	}
}

func decodeDocument(raw []byte) ([]Object, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("a manifest must be an object, not %T", v)
	}
	kind, _ := o["kind"].(string)
	if items, ok := o["items"]; ok && strings.HasSuffix(kind, "List") {
		list, ok := items.([]any)
		if !ok {
			return nil, fmt.Errorf("%s: items must be a list", kind)
		}
		var out []Object
		for i, it := range list {
			m, ok := it.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: item %d is not an object", kind, i)
			}
			if err := check(m); err != nil {
				return nil, fmt.Errorf("%s: item %d: %v", kind, i, err)
			}
			out = append(out, m)
		}
		return out, nil
	}
	if err := check(o); err != nil {
		return nil, err
	}
	return []Object{o}, nil
}

func check(o Object) error {
	av, ok := o["apiVersion"].(string)
	if !ok || av == "" {
		return errors.New("apiVersion must be a non-empty string")
	}
	k, ok := o["kind"].(string)
	if !ok || k == "" {
		return errors.New("kind must be a non-empty string")
	}
	switch md := o["metadata"].(type) {
	case map[string]any:
	case nil:
		o["metadata"] = map[string]any{}
	default:
		return fmt.Errorf("metadata must be an object, not %T", md)
	}
	return nil
}

// IsManifest reports whether a file name is read by ReadFiles.
func IsManifest(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".yaml", ".yml", ".json":
		return true
	}
	return false
}

// Files lists the manifest files directly in dir, sorted by name.
func Files(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if e.Type().IsRegular() && IsManifest(e.Name()) {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	return out, nil
}

// ReadFiles decodes the files in order.
func ReadFiles(paths ...string) ([]Object, error) {
	var out []Object
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		objs, err := Decode(p, b)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
	return out, nil
}
