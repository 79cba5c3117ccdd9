// Package logging sets up the process's logs: klog, controller-runtime's logger and log/slog in one place, so
// the embedded Kubernetes components, Flotilla's controllers and the agent log alike.
package logging

import (
	"flag"
	"log/slog"
	"strconv"

	"github.com/go-logr/logr"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
)

// Setup configures klog once for the whole process: the embedded Kubernetes components and Flotilla's
// controllers all log through it, and so does everything that logs through log/slog. With a file, component
// logs go there and the terminal keeps only the command's own progress lines.
func Setup(verbosity int, file string) error {
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
	ctrl.SetLogger(klog.NewKlogr())
	// Libraries that log through log/slog (kwok does) end up in the same place.
	slog.SetDefault(slog.New(logr.ToSlogHandler(klog.NewKlogr())))
	return nil
}
