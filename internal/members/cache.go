package members

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// TTL is how long a Cache uses what it built for a member before it reads the member's credentials again.
// Reading the Secret on every use would double the cost of a proxied GET; a minute bounds how long a
// rotated Secret goes unnoticed.
const TTL = time.Minute

// ConfigFunc returns how the hub reaches a cluster's member.
type ConfigFunc func(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*rest.Config, error)

// FromSecrets is the ConfigFunc of push members: Config, reading their Secrets with secrets.
func FromSecrets(secrets client.Reader) ConfigFunc {
	return func(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
		return Config(ctx, secrets, cluster)
	}
}

// Cache holds what one user builds for each member from its configuration (the executor's clients and
// watches, the proxy's transports, the service collector's informer, the status reporter's client), under
// the rule the package doc states. It is safe for concurrent use.
type Cache[T any] struct {
	config ConfigFunc
	build  func(cluster string, cfg *rest.Config) (T, error)
	stop   func(T)
	now    func() time.Time

	mu      sync.Mutex
	entries map[string]*entry[T]
	closed  bool
}

type entry[T any] struct {
	value T
	// cluster identifies the Cluster the entry was last checked for: its UID and credential fields.
	cluster string
	// fingerprint identifies the configuration value was built from.
	fingerprint string
	checked     time.Time
}

// NewCache returns a Cache that builds its values with build, from a copy of the configuration config
// returns, and stops with stop (nil when there is nothing to stop) each value it replaces or drops. build
// runs under the cache's lock and must not send requests.
func NewCache[T any](config ConfigFunc, build func(cluster string, cfg *rest.Config) (T, error), stop func(T)) *Cache[T] {
	return &Cache[T]{config: config, build: build, stop: stop, now: time.Now, entries: map[string]*entry[T]{}}
}

// Get returns the value of cluster's member: the one held, while the rule allows; otherwise it reads the
// member's configuration again and builds a new value if the configuration changed. An error is returned,
// and never held: the next Get tries again.
func (c *Cache[T]) Get(ctx context.Context, cluster *clusterv1alpha1.Cluster) (T, error) {
	var zero T
	key := string(cluster.UID) + "|" + cluster.Spec.Credential()
	c.mu.Lock()
	e, ok := c.entries[cluster.Name]
	c.mu.Unlock()
	if ok && e.cluster == key && c.now().Sub(e.checked) < TTL {
		return e.value, nil
	}
	// Outside the lock: one slow member holds up no other.
	cfg, err := c.config(ctx, cluster)
	if err != nil {
		return zero, err
	}
	fp := fingerprint(cluster, cfg)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return zero, errors.New("the cache of member clients is closed")
	}
	e, ok = c.entries[cluster.Name] // another caller may have been here meanwhile
	if !ok || e.fingerprint != fp {
		value, err := c.build(cluster.Name, rest.CopyConfig(cfg))
		if err != nil {
			return zero, err
		}
		if ok && c.stop != nil {
			c.stop(e.value)
		}
		e = &entry[T]{value: value, fingerprint: fp}
		c.entries[cluster.Name] = e
	}
	e.cluster, e.checked = key, c.now()
	return e.value, nil
}

// Drop stops and forgets the value of a cluster that left or is no longer served.
func (c *Cache[T]) Drop(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.entries[name]; ok {
		if c.stop != nil {
			c.stop(e.value)
		}
		delete(c.entries, name)
	}
}

// Close stops every value; Get builds none after it.
func (c *Cache[T]) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for name, e := range c.entries {
		if c.stop != nil {
			c.stop(e.value)
		}
		delete(c.entries, name)
	}
	c.closed = true
}

// fingerprint identifies what a member's clients are built from: the endpoint, proxy and TLS settings of the
// cluster and the credentials of its Secret.
func fingerprint(cluster *clusterv1alpha1.Cluster, cfg *rest.Config) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(cfg.Host), []byte(cluster.Spec.ProxyURL), []byte(strconv.FormatBool(cfg.Insecure)), []byte(cfg.ServerName),
		cfg.CAData, cfg.CertData, cfg.KeyData, []byte(cfg.BearerToken), []byte(cfg.Username), []byte(cfg.Password)} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}
