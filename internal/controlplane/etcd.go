package controlplane

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

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
}

// Etcd is a running embedded etcd member.
type Etcd struct {
	server *embed.Etcd
	// ClientURL is where clients reach the member.
	ClientURL string
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
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*clientURL}, []url.URL{*clientURL}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peerURL}, []url.URL{*peerURL}
	cfg.InitialCluster = c.Name + "=" + c.PeerURL
	if len(c.InitialCluster) > 0 {
		cfg.InitialCluster = strings.Join(c.InitialCluster, ",")
	}
	cfg.InitialClusterToken = "flotilla"
	cfg.LogLevel = "warn"
	cfg.LogOutputs = []string{"stderr"}
	if c.LogFile != "" {
		cfg.LogOutputs = []string{c.LogFile}
	}
	// The hub keeps a modest history; compacting hourly keeps the database from growing without bound.
	cfg.AutoCompactionMode = "periodic"
	cfg.AutoCompactionRetention = "1h"

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
	return &Etcd{server: server, ClientURL: c.ClientURL}, nil
}

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

// Close stops the member and releases its data directory.
func (e *Etcd) Close() { e.server.Close() }
