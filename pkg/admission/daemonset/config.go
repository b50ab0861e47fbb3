/*
Copyright 2026 Authors of Arktos.
Copyright 2026 Authors of tpkit.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

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
