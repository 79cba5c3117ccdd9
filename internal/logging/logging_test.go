package logging

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
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

// TestStopOutlivesTheLogFile: a benchmark removes its work directory, log file and all, while the components
// it ran may still log as they stop. After Stop the process goes on; without it klog's first line ends the
// process with "unable to create log". The test runs in a child process, since that failure is an exit.
func TestStopOutlivesTheLogFile(t *testing.T) {
	if os.Getenv("FLOTILLA_LOGGING_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestStopOutlivesTheLogFile$", "-test.v")
		cmd.Env = append(os.Environ(), "FLOTILLA_LOGGING_CHILD=1")
		if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "the process went on") {
			t.Fatalf("%v\n%s", err, out)
		}
		return
	}
	dir, err := os.MkdirTemp("", "flotilla-logging-")
	if err != nil {
		t.Fatal(err)
	}
	if err := Setup(0, filepath.Join(dir, "bench.log")); err != nil {
		t.Fatal(err)
	}
	Stop()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	klog.Info("a component stopping late")
	klog.Flush()
	t.Log("the process went on")
}
