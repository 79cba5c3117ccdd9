package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChartsCurrent: the committed README.md and values.schema.json of both charts are what chartdoc writes.
func TestChartsCurrent(t *testing.T) {
	for _, dir := range []string{"../../charts/flotilla", "../../charts/flotilla-agent"} {
		if err := generate(dir, true); err != nil {
			t.Error(err)
		}
	}
}

// TestUndescribedValueRefused: a value without a "# --" description is an error naming it and its line; a
// group's keys are described one by one.
func TestUndescribedValueRefused(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "Chart.yaml"), []byte("name: c\nversion: 0.1.0\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	values := "group:\n  # -- Described.\n  a: 1\n  b: true\n"
	if err := os.WriteFile(filepath.Join(dir, "values.yaml"), []byte(values), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := generate(dir, false); err == nil || !strings.Contains(err.Error(), `line 4: group.b has no "# --" description`) {
		t.Fatalf("error = %v, want one naming group.b at line 4", err)
	}
}
