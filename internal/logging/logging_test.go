package logging

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// TestJSONFormatWritesJSONLines logs through klog and controller-runtime with --log-format json: every line in
// the log file is a JSON object, with the message and its key/value pairs as fields.
func TestJSONFormatWritesJSONLines(t *testing.T) {
	file := filepath.Join(t.TempDir(), "hub.log")
	if err := SetupFormat(0, file, FormatJSON); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = Setup(0, "") })
	klog.InfoS("cluster ready", "cluster", "m1")
	ctrl.Log.WithName("binding").Info("reconciled", "binding", "web")
	klog.Flush()

	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var msgs []string
	for s := bufio.NewScanner(f); s.Scan(); {
		var line map[string]any
		if err := json.Unmarshal(s.Bytes(), &line); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, s.Text())
		}
		msgs = append(msgs, line["msg"].(string))
		if line["msg"] == "cluster ready" && line["cluster"] != "m1" {
			t.Errorf("key/value pair missing: %s", s.Text())
		}
	}
	if got := strings.Join(msgs, ","); got != "cluster ready,reconciled" {
		t.Fatalf("messages %q, want cluster ready,reconciled", got)
	}
}

func TestFormatFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want Format
		err  string
	}{
		{args: nil, want: FormatText},
		{args: []string{"--log-format", "json"}, want: FormatJSON},
		{args: []string{"--log-format", "xml"}, err: `"xml" is not a log format: use text or json`},
	} {
		fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
		var f Format
		AddFormatFlag(fs, &f)
		err := fs.Parse(tc.args)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%v: error %v, want %q", tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || f != tc.want {
			t.Errorf("%v: %q, %v; want %q", tc.args, f, err, tc.want)
		}
	}
}
