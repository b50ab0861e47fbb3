package daemonset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/ioutil"
)

// ParseConfig reads a Config from an admission plugin's configuration, the
// io.Reader that k8s.io/apiserver's plugin registry (admission.Plugins)
// hands a plugin factory: JSON such as
//
//	{"adminOnly": true, "adminGroups": ["system:masters", "ops"]}
//
// A nil reader or an empty document is the zero Config (Arktos's rule
// only). apiVersion and kind may be present (Kubernetes-style plugin
// configurations carry them) and are not checked; any other unknown field is
// an error, so a misspelt option is not silently ignored. The API server passes a configuration embedded in its
// AdmissionConfiguration file as JSON; a file named by "path" is passed as
// it is, so it must be JSON too (which is valid YAML).
func ParseConfig(r io.Reader) (Config, error) {
	var c Config
	if r == nil {
		return c, nil
	}
	b, err := ioutil.ReadAll(r) // io.ReadAll is Go 1.16; the core is Go 1.13
	if err != nil {
		return c, fmt.Errorf("reading %s configuration: %w", ArktosPluginName, err)
	}
	if len(bytes.TrimSpace(b)) == 0 {
		return c, nil
	}
	var doc struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Config
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&doc); err != nil {
		return Config{}, fmt.Errorf("%s configuration: %w", ArktosPluginName, err)
	}
	if _, err := d.Token(); err != io.EOF {
		return Config{}, fmt.Errorf("%s configuration: data after the JSON object", ArktosPluginName)
	}
	return doc.Config, nil
}
