package hub

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flotilla-io/flotilla/internal/controlplane"
)

func TestOptionsValidate(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pem := filepath.Join(t.TempDir(), "etcd.pem")
	if err := os.WriteFile(pem, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	etcdTLS := controlplane.EtcdTLS{CAFile: pem, CertFile: pem, KeyFile: pem}
	tests := []struct {
		name    string
		change  func(o *Options)
		wantErr string
	}{
		{"defaults with a data dir", func(o *Options) { o.DataDir = "/tmp/x" }, ""},
		{"existing cluster", func(o *Options) { o.Kubeconfig, o.DataDir = kubeconfig, "" }, ""},
		{"cluster-set mode", func(o *Options) { o.DataDir, o.ClusterSetMode = "/tmp/x", "Open" }, ""},
		{"cluster-set mode misspelt", func(o *Options) { o.DataDir, o.ClusterSetMode = "/tmp/x", "open" },
			`--clusterset-mode: "open" is not a cluster-set mode: want RequireBindings or Open`},
		{"port 0", func(o *Options) { o.SecurePort = 0 }, "--secure-port 0: must be between 1 and 65535"},
		{"port too large", func(o *Options) { o.SecurePort = 70000 }, "--secure-port 70000"},
		{"bind address not an IP", func(o *Options) { o.BindAddress = "localhost" }, `--bind-address "localhost": not an IP address`},
		{"advertise address not an IP", func(o *Options) { o.AdvertiseAddress = "hub.example.com" }, `--advertise-address "hub.example.com"`},
		{"empty tls-san", func(o *Options) { o.TLSSANs = []string{" "} }, "--tls-san"},
		{"tls-san with a scheme", func(o *Options) { o.TLSSANs = []string{"https://hub"} }, `--tls-san "https://hub"`},
		{"tls-san IPv6 is fine", func(o *Options) { o.TLSSANs = []string{"::1", "hub.example.com"} }, ""},
		{"etcd server without scheme", func(o *Options) { o.EtcdServers = []string{"127.0.0.1:2379"} }, `--etcd-servers "127.0.0.1:2379": not an http(s) URL`},
		{"etcd prefix without slash", func(o *Options) { o.EtcdPrefix = "registry" }, `--etcd-prefix "registry": must start with /`},
		{"etcd over TLS", func(o *Options) { o.EtcdServers, o.EtcdTLS = []string{"https://e:2379"}, etcdTLS }, ""},
		{"etcd CA alone", func(o *Options) {
			o.EtcdServers, o.EtcdTLS = []string{"https://e:2379"}, controlplane.EtcdTLS{CAFile: pem}
		}, ""},
		{"etcd TLS without etcd servers", func(o *Options) { o.EtcdTLS = etcdTLS }, "configure the connection to --etcd-servers"},
		{"etcd TLS with an http server", func(o *Options) { o.EtcdServers, o.EtcdTLS = []string{"http://e:2379"}, etcdTLS },
			`--etcd-servers "http://e:2379": TLS to etcd needs https URLs`},
		{"etcd certificate without key", func(o *Options) {
			o.EtcdServers, o.EtcdTLS = []string{"https://e:2379"}, controlplane.EtcdTLS{CertFile: pem}
		}, "--etcd-certfile and --etcd-keyfile go together"},
		{"etcd key file missing", func(o *Options) {
			o.EtcdServers, o.EtcdTLS = []string{"https://e:2379"}, controlplane.EtcdTLS{CertFile: pem, KeyFile: "/does/not/exist"}
		}, "--etcd-keyfile: open /does/not/exist"},
		{"kubeconfig with etcd TLS", func(o *Options) { o.Kubeconfig, o.DataDir, o.EtcdTLS = kubeconfig, "", etcdTLS }, "cannot be used with --kubeconfig"},
		{"negative failover toleration", func(o *Options) { o.DefaultFailoverToleration = -time.Second }, "--default-failover-toleration -1s: must not be negative"},
		{"failover at once", func(o *Options) { o.DefaultFailoverToleration = 0 }, ""},
		{"negative deschedule-after", func(o *Options) { o.DescheduleAfter = -time.Second }, "--deschedule-after -1s: must not be negative"},
		{"never deschedule", func(o *Options) { o.DescheduleAfter = 0 }, ""},
		{"threshold zero", func(o *Options) { o.Failover.UnhealthyThreshold = 0 }, "--unhealthy-fleet-threshold 0: must be a share above 0 and at most 1"},
		{"threshold as a percentage", func(o *Options) { o.Failover.UnhealthyThreshold = 55 }, "--unhealthy-fleet-threshold 55"},
		{"threshold not a number", func(o *Options) { o.Failover.UnhealthyThreshold = math.NaN() }, "--unhealthy-fleet-threshold NaN"},
		{"threshold all", func(o *Options) { o.Failover.UnhealthyThreshold = 1 }, ""},
		{"failover rate zero", func(o *Options) { o.Failover.PerMinute = 0 }, "--failover-rate 0: must be a number of clusters per minute above 0"},
		{"failover rate infinite", func(o *Options) { o.Failover.PerMinute = math.Inf(1) }, "--failover-rate +Inf"},
		{"unknown controller", func(o *Options) { o.Controllers = []string{"nope"} }, `unknown controller "nope"`},
		{"kubeconfig with data dir", func(o *Options) { o.Kubeconfig = kubeconfig; o.DataDir = "/tmp/x" }, "cannot be used with --kubeconfig"},
		{"kubeconfig with etcd", func(o *Options) {
			o.Kubeconfig, o.DataDir, o.EtcdServers = kubeconfig, "", []string{"http://e:2379"}
		}, "cannot be used with --kubeconfig"},
		{"profiling the embedded hub", func(o *Options) { o.Profiling = true }, ""},
		{"profiling with kubeconfig", func(o *Options) { o.Kubeconfig, o.DataDir, o.Profiling = kubeconfig, "", true },
			"--profiling serves the embedded hub's profiles and cannot be used with --kubeconfig"},
		{"webhook on a free port of a given host", func(o *Options) { o.Kubeconfig, o.DataDir, o.WebhookHost = kubeconfig, "", "hub.example.com" }, ""},
		{"webhook behind a Service", func(o *Options) {
			o.Kubeconfig, o.DataDir, o.WebhookService, o.WebhookPort = kubeconfig, "", "flotilla-system/flotilla-hub", 9443
		}, ""},
		{"webhook Service without a port", func(o *Options) {
			o.Kubeconfig, o.DataDir, o.WebhookService = kubeconfig, "", "flotilla-system/flotilla-hub"
		},
			"--webhook-service needs --webhook-port"},
		{"webhook Service without a namespace", func(o *Options) {
			o.Kubeconfig, o.DataDir, o.WebhookService, o.WebhookPort = kubeconfig, "", "flotilla-hub", 9443
		},
			`--webhook-service "flotilla-hub": want NAMESPACE/NAME`},
		{"webhook Service and host", func(o *Options) {
			o.Kubeconfig, o.DataDir, o.WebhookService, o.WebhookPort, o.WebhookHost = kubeconfig, "", "ns/hub", 9443, "hub.example.com"
		}, "--webhook-host and --webhook-service are exclusive"},
		{"webhook host with a scheme", func(o *Options) { o.Kubeconfig, o.DataDir, o.WebhookHost = kubeconfig, "", "https://hub" }, `--webhook-host "https://hub"`},
		{"webhook port too large", func(o *Options) { o.Kubeconfig, o.DataDir, o.WebhookPort = kubeconfig, "", 70000 }, "--webhook-port 70000"},
		{"webhook of the embedded hub", func(o *Options) { o.WebhookPort = 9443 }, "--webhook-port, --webhook-host and --webhook-service apply only to --kubeconfig"},
		{"metrics on a port of their own", func(o *Options) { o.Kubeconfig, o.DataDir, o.MetricsPort = kubeconfig, "", 8080 }, ""},
		{"metrics port too large", func(o *Options) { o.Kubeconfig, o.DataDir, o.MetricsPort = kubeconfig, "", 65536 }, "--metrics-port 65536: want 0 (a free port) to 65535"},
		{"metrics port negative", func(o *Options) { o.Kubeconfig, o.DataDir, o.MetricsPort = kubeconfig, "", -1 }, "--metrics-port -1"},
		{"metrics on the webhook's port", func(o *Options) { o.Kubeconfig, o.DataDir, o.MetricsPort, o.WebhookPort = kubeconfig, "", 9443, 9443 },
			"--metrics-port 9443: --webhook-port serves there already"},
		{"metrics port of the embedded hub", func(o *Options) { o.MetricsPort = 8080 }, "--metrics-port applies only to --kubeconfig"},
		{"kubeconfig with a bind address that is not an IP", func(o *Options) { o.Kubeconfig, o.DataDir, o.BindAddress = kubeconfig, "", "any" },
			`--bind-address "any": not an IP address`},
		{"shard over an existing cluster", func(o *Options) { o.Kubeconfig, o.DataDir, o.Shard = kubeconfig, "", true }, ""},
		{"shard on an external etcd", func(o *Options) { o.EtcdServers, o.Shard = []string{"http://e:2379"}, true }, ""},
		{"shard on the embedded etcd", func(o *Options) { o.Shard = true }, "--shard divides the work among replicas: it needs --etcd-servers or --kubeconfig"},
		{"shard lease too short", func(o *Options) {
			o.Kubeconfig, o.DataDir, o.Shard, o.ShardLeaseDuration = kubeconfig, "", true, time.Second
		},
			"--shard-lease-duration 1s: want 3s to 5m"},
		{"shard lease too long", func(o *Options) {
			o.Kubeconfig, o.DataDir, o.Shard, o.ShardLeaseDuration = kubeconfig, "", true, time.Hour
		},
			"--shard-lease-duration 1h0m0s: want 3s to 5m"},
		{"shard lease unused without shard", func(o *Options) { o.ShardLeaseDuration = 0 }, ""},
		{"missing kubeconfig", func(o *Options) { o.Kubeconfig, o.DataDir = "/does/not/exist", "" }, "--kubeconfig: stat /does/not/exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			o.DataDir = "/tmp/flotilla-options-test"
			tt.change(o)
			err := o.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
		})
	}
}

func TestOptionsDefaultDataDir(t *testing.T) {
	t.Setenv("HOME", "/home/ops")
	o := NewOptions()
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if o.DataDir != "/home/ops/.flotilla/hub" {
		t.Fatalf("default data dir = %s", o.DataDir)
	}
}
