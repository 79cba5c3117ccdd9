package controlplane

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/transport"
	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/klog/v2"
)

// Storage limits of an embedded etcd member.
const (
	// EtcdQuotaBytes is the size the member's database may reach before etcd refuses writes (and raises a
	// NOSPACE alarm) rather than fill the disk. Twice etcd's default of 2 GiB: the hub keeps a Work per
	// template and cluster; well under the 8 GiB etcd suggests as a maximum.
	EtcdQuotaBytes = 4 << 30
	// etcdCompactionRetention is how much history periodic compaction keeps. kube-apiserver compacts too,
	// every five minutes; this bounds the history when nothing else does (a member used by other clients).
	etcdCompactionRetention = "1h"
	// etcdDefragPeriod is how often the member checks whether its database file is mostly free pages.
	etcdDefragPeriod = 10 * time.Minute
)

// etcdClusterToken tells apart etcd clusters that could reach each other's members.
const etcdClusterToken = "flotilla"

// etcdDefragMinFree is the free space below which defragmenting is not worth the pause it causes.
var etcdDefragMinFree int64 = 64 << 20

// EtcdTLS names the files of a TLS identity and of the CA that identity trusts on the other side.
type EtcdTLS struct {
	CAFile, CertFile, KeyFile string
}

// EtcdConfig describes one embedded etcd member.
type EtcdConfig struct {
	// Name of the member, unique in its cluster.
	Name string
	// Dir holds the member's data.
	Dir string
	// ClientURL and PeerURL are where the member listens, for example http://127.0.0.1:2379.
	ClientURL, PeerURL string
	// InitialCluster lists every member as name=peerURL; empty means a cluster of this member alone.
	InitialCluster []string
	// LogFile receives etcd's log; empty discards everything below errors to stderr.
	LogFile string
	// TLS, when set, makes the member serve clients and peers only over TLS, and only to holders of a
	// certificate signed by TLS.CAFile. ClientURL and PeerURL must then be https URLs.
	TLS *EtcdTLS
}

// Etcd is a running embedded etcd member.
type Etcd struct {
	server *embed.Etcd
	// ClientURL is where clients reach the member.
	ClientURL string

	stop      chan struct{}
	defragged sync.WaitGroup
}

// StartEtcd starts an etcd member in this process and waits until it serves, which for a member of a larger
// cluster means until the cluster has a quorum.
func StartEtcd(c EtcdConfig) (*Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name = c.Name
	cfg.Dir = c.Dir
	clientURL, err := url.Parse(c.ClientURL)
	if err != nil {
		return nil, fmt.Errorf("etcd client URL: %w", err)
	}
	peerURL, err := url.Parse(c.PeerURL)
	if err != nil {
		return nil, fmt.Errorf("etcd peer URL: %w", err)
	}
	if c.TLS != nil {
		if clientURL.Scheme != "https" || peerURL.Scheme != "https" {
			return nil, fmt.Errorf("etcd with TLS needs https URLs, not %s and %s", c.ClientURL, c.PeerURL)
		}
		info := transport.TLSInfo{CertFile: c.TLS.CertFile, KeyFile: c.TLS.KeyFile, TrustedCAFile: c.TLS.CAFile, ClientCertAuth: true}
		cfg.ClientTLSInfo, cfg.PeerTLSInfo = info, info
	}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*clientURL}, []url.URL{*clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peerURL}, []url.URL{*peerURL}
	cfg.InitialCluster = c.Name + "=" + c.PeerURL
	if len(c.InitialCluster) > 0 {
		cfg.InitialCluster = strings.Join(c.InitialCluster, ",")
	}
	cfg.InitialClusterToken = etcdClusterToken
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}
	if c.LogFile != "" {
		cfg.LogOutputs = []string{c.LogFile}
	}
	cfg.QuotaBackendBytes = EtcdQuotaBytes
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = etcdCompactionRetention

	server, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting etcd in %s: %w", c.Dir, err)
	}
	select {
	case <-server.Server.ReadyNotify():
	case err := <-server.Err():
		server.Close()
		return nil, fmt.Errorf("etcd failed: %w", err)
	case <-time.After(2 * time.Minute):
		server.Close()
		return nil, fmt.Errorf("etcd in %s did not become ready within 2 minutes", c.Dir)
	}
	e := &Etcd{server: server, ClientURL: c.ClientURL, stop: make(chan struct{})}
	e.defragged.Go(e.defragmentPeriodically)
	return e, nil
}

// defragmentPeriodically defragments the member whenever its database file is mostly free pages, until Close.
// Compaction frees pages inside the file but never shrinks it, and the quota counts the file.
func (e *Etcd) defragmentPeriodically() {
	tick := time.NewTicker(etcdDefragPeriod)
	defer tick.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-tick.C:
		}
		if _, err := e.defragmentIfWasteful(); err != nil {
			klog.Warningf("etcd defragmentation: %v", err)
		}
	}
}

// defragmentIfWasteful defragments the member when at least half of its database file, and at least
// etcdDefragMinFree, is free, and reports whether it did.
func (e *Etcd) defragmentIfWasteful() (bool, error) {
	be := e.server.Server.Backend()
	if !wasteful(be.Size(), be.SizeInUse()) {
		return false, nil
	}
	return true, e.server.Server.Defragment()
}

func wasteful(size, inUse int64) bool {
	free := size - inUse
	return free >= etcdDefragMinFree && 2*free >= size
}

// dbSize is the size of the member's database file.
func (e *Etcd) dbSize() int64 { return e.server.Server.Backend().Size() }

// ValidateEtcdFlags checks --etcd-servers (http(s) URLs) and --etcd-prefix (a key path).
func ValidateEtcdFlags(servers []string, prefix string) []error {
	var errs []error
	for _, s := range servers {
		if u, err := url.Parse(s); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			errs = append(errs, fmt.Errorf("--etcd-servers %q: not an http(s) URL", s))
		}
	}
	if !strings.HasPrefix(prefix, "/") {
		errs = append(errs, fmt.Errorf("--etcd-prefix %q: must start with /", prefix))
	}
	return errs
}

// ValidateEtcdTLSFlags checks --etcd-cafile, --etcd-certfile and --etcd-keyfile: they configure the connection
// to --etcd-servers, name readable files, and need https servers; a certificate needs its key.
func ValidateEtcdTLSFlags(servers []string, tls EtcdTLS) []error {
	if tls == (EtcdTLS{}) {
		return nil
	}
	if len(servers) == 0 {
		return []error{errors.New("--etcd-cafile, --etcd-certfile and --etcd-keyfile configure the connection to --etcd-servers; the embedded etcd uses certificates in DIR/pki")}
	}
	var errs []error
	if (tls.CertFile == "") != (tls.KeyFile == "") {
		errs = append(errs, errors.New("--etcd-certfile and --etcd-keyfile go together"))
	}
	for _, f := range []struct{ flag, file string }{{"--etcd-cafile", tls.CAFile}, {"--etcd-certfile", tls.CertFile}, {"--etcd-keyfile", tls.KeyFile}} {
		if f.file == "" {
			continue
		}
		if r, err := os.Open(f.file); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", f.flag, err))
		} else {
			r.Close()
		}
	}
	for _, s := range servers {
		if !strings.HasPrefix(s, "https://") {
			errs = append(errs, fmt.Errorf("--etcd-servers %q: TLS to etcd needs https URLs", s))
		}
	}
	return errs
}

// Close stops the member and releases its data directory.
func (e *Etcd) Close() {
	close(e.stop)
	e.defragged.Wait()
	e.server.Close()
}
