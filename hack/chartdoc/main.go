// Command chartdoc writes each chart's README.md and values.schema.json from its values.yaml: every value is
// described by a "# -- description" comment above its key (continued on the comment lines that follow), and
// its default's type is its type in the schema, which Helm checks values against on install and render. A
// key without a description is a group: its keys are described one by one (and the schema allows no others
// in it); a described key that holds a map or a list is one value, whatever it holds.
//
//	go run ./hack/chartdoc [-check] [CHART_DIR...]   (default: charts/flotilla charts/flotilla-agent)
//
// With -check it writes nothing and fails when a file is not what it would write (make verify).
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

func main() {
	check := flag.Bool("check", false, "write nothing; fail when a README.md or values.schema.json is not current")
	flag.Parse()
	dirs := flag.Args()
	if len(dirs) == 0 {
		dirs = []string{"charts/flotilla", "charts/flotilla-agent"}
	}
	var errs []error
	for _, dir := range dirs {
		errs = append(errs, generate(dir, *check))
	}
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// generate writes (or with check compares) dir's README.md and values.schema.json.
func generate(dir string, check bool) error {
	meta, err := readChart(dir)
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		return fmt.Errorf("%s/values.yaml: %w", dir, err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return fmt.Errorf("%s/values.yaml: not a map of values", dir)
	}
	var values []value
	schema, err := walk(doc.Content[0], "", &values)
	if err != nil {
		return fmt.Errorf("%s/values.yaml: %w", dir, err)
	}
	schema["$schema"] = "https://json-schema.org/draft-07/schema#"
	// Helm passes global values to every chart, a subchart's parent's included.
	schema["properties"].(map[string]any)["global"] = map[string]any{"type": "object", "description": "Helm's global values."}
	schemaJSON, err := json.MarshalIndent(schema, "", "  ")
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"README.md":          readme(meta, values),
		"values.schema.json": append(schemaJSON, '\n'),
	}
	var stale []string
	for name, want := range files {
		path := filepath.Join(dir, name)
		if check {
			if have, err := os.ReadFile(path); err != nil || !bytes.Equal(have, want) {
				stale = append(stale, path)
			}
			continue
		}
		if err := os.WriteFile(path, want, 0o644); err != nil {
			return err
		}
	}
	if len(stale) > 0 {
		return fmt.Errorf("%s not current: run go run ./hack/chartdoc and commit", strings.Join(stale, " and "))
	}
	return nil
}

// chartMeta is what the README says of the chart, from Chart.yaml.
type chartMeta struct {
	Name        string `yaml:"name"`
	Description string `yaml:"description"`
	Version     string `yaml:"version"`
	AppVersion  string `yaml:"appVersion"`
	KubeVersion string `yaml:"kubeVersion"`
}

func readChart(dir string) (chartMeta, error) {
	var m chartMeta
	raw, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return m, err
	}
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return m, fmt.Errorf("%s/Chart.yaml: %w", dir, err)
	}
	return m, nil
}

// value is one described value: its dotted key, type, default (as JSON) and description.
type value struct {
	key, typ, def, description string
}

// walk collects the described values of mapping node m under prefix and returns m's schema.
func walk(m *yaml.Node, prefix string, values *[]value) (map[string]any, error) {
	properties := map[string]any{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		key := prefix + k.Value
		description, described := describe(k.HeadComment)
		if !described {
			if v.Kind != yaml.MappingNode || len(v.Content) == 0 {
				return nil, fmt.Errorf("line %d: %s has no \"# --\" description", k.Line, key)
			}
			group, err := walk(v, key+".", values)
			if err != nil {
				return nil, err
			}
			properties[k.Value] = group
			continue
		}
		var def any
		if err := v.Decode(&def); err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", k.Line, key, err)
		}
		typ := jsonType(def)
		defJSON, err := json.Marshal(def)
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", k.Line, key, err)
		}
		*values = append(*values, value{key: key, typ: typ, def: string(defJSON), description: description})
		property := map[string]any{"description": description}
		if typ != "null" { // a null default says nothing of the type
			property["type"] = typ
		}
		properties[k.Value] = property
	}
	return map[string]any{"type": "object", "properties": properties, "additionalProperties": false}, nil
}

// describe returns the description of a key's head comment: the text from its "# --" line on.
func describe(comment string) (string, bool) {
	var lines []string
	described := false
	for _, line := range strings.Split(comment, "\n") {
		text := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(line), "#"))
		if rest, ok := strings.CutPrefix(text, "--"); ok {
			described, lines = true, []string{strings.TrimSpace(rest)}
			continue
		}
		if described && text != "" {
			lines = append(lines, text)
		}
	}
	return strings.Join(lines, " "), described
}

// jsonType is the JSON schema type of a decoded default.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case int, int64, uint64:
		return "integer"
	case float64:
		return "number"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	default:
		return "null"
	}
}

// readme is the chart's README.md.
func readme(m chartMeta, values []value) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# %s\n\n%s\n\n", m.Name, m.Description)
	fmt.Fprintf(&b, "Chart version %s, app version %s; Kubernetes %s.\n\n", m.Version, m.AppVersion, m.KubeVersion)
	b.WriteString("<!-- Written by `go run ./hack/chartdoc` from values.yaml and Chart.yaml: edit those, not this file. -->\n\n")
	b.WriteString("## Values\n\n| Key | Type | Default | Description |\n|---|---|---|---|\n")
	for _, v := range values {
		fmt.Fprintf(&b, "| `%s` | %s | `%s` | %s |\n", v.key, v.typ, v.def, strings.ReplaceAll(v.description, "|", "\\|"))
	}
	return b.Bytes()
}
