// Package logging sets up the process's logs: klog, controller-runtime's logger and log/slog in one place, so
// the embedded Kubernetes components, Flotilla's controllers and the agent log alike.
package logging

import (
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	logsapi "k8s.io/component-base/logs/api/v1"
	logsjson "k8s.io/component-base/logs/json"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Format is how log lines are written.
type Format string

const (
	// FormatText is klog's text format.
	FormatText Format = "text"
	// FormatJSON is Kubernetes components' JSON format (component-base): one object a line, for log collectors.
	FormatJSON Format = "json"
)

// AddFormatFlag registers --log-format on fs, writing into f. A value other than text or json fails the
// command line before anything starts.
func AddFormatFlag(fs *pflag.FlagSet, f *Format) {
	*f = FormatText
	fs.Var(f, "log-format", `format of the logs: "text" or "json" (one JSON object a line, as Kubernetes components write it)`)
}

func (f *Format) String() string { return string(*f) }
func (f *Format) Type() string   { return "format" }
func (f *Format) Set(v string) error {
	switch Format(v) {
	case FormatText, FormatJSON:
		*f = Format(v)
		return nil
	}
	return fmt.Errorf("%q is not a log format: use text or json", v)
}

// Setup configures klog once for the whole process, in the text format.
func Setup(verbosity int, file string) error { return SetupFormat(verbosity, file, FormatText) }

// SetupFormat configures klog once for the whole process: the embedded Kubernetes components and Flotilla's
// controllers all log through it, and so does everything that logs through log/slog. With a file, component
// logs go there and the terminal keeps only the command's own progress lines.
func SetupFormat(verbosity int, file string, format Format) error {
	fs := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(fs)
	settings := map[string]string{"v": strconv.Itoa(verbosity)}
	if file != "" {
		settings["logtostderr"] = "false"
		settings["alsologtostderr"] = "false"
		settings["stderrthreshold"] = "FATAL"
		settings["log_file"] = file
		settings["one_output"] = "true"
	}
	for k, v := range settings {
		if err := fs.Set(k, v); err != nil {
			return err
		}
	}
	if format == FormatJSON {
		// klog still decides verbosity; every line it lets through is written by the JSON logger instead.
		var out io.Writer = os.Stderr
		if file != "" {
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
			if err != nil {
				return err
			}
			out = f // open until the process exits, like klog's own file
		}
		logger, _ := logsjson.Factory{}.Create(
			logsapi.LoggingConfiguration{Format: string(FormatJSON), Verbosity: logsapi.VerbosityLevel(verbosity)},
			logsapi.LoggingOptions{ErrorStream: out, InfoStream: out})
		klog.SetLoggerWithOptions(logger, klog.ContextualLogger(true))
	} else {
		klog.ClearLogger()
	}
	ctrl.SetLogger(klog.NewKlogr())
	// Libraries that log through log/slog (kwok does) end up in the same place.
	slog.SetDefault(slog.New(logr.ToSlogHandler(klog.NewKlogr())))
	return nil
}

// Stop writes out what was logged and discards every later line. A process that removes its log file's
// directory while its components still stop calls it first: klog creates its file on the first line written
// (and again on rotation), and ends the process with status 2 when it cannot.
func Stop() {
	klog.Flush()
	klog.SetOutput(io.Discard)
}
