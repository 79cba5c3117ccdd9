package proxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
)

// credentialsTTL is how long the proxy uses a push member's transports before reading its Secret again; a
// change of the Cluster's spec rebuilds them at once. Reading the Secret on every request would double the
// cost of a proxied GET.
const credentialsTTL = time.Minute

// PushBackend reaches push members with the credentials the hub stores for them, which must allow
// impersonating users, groups and user extras on the member.
type PushBackend struct {
	// Hub reads the Secrets named by push Clusters.
	Hub client.Reader

	mu      sync.Mutex
	targets map[string]cachedTarget
}

type cachedTarget struct {
	target *Target
	// spec identifies the Cluster spec the target was built from.
	spec    string
	expires time.Time
}

// For returns the Target of a push cluster, built anew when its spec changed or its credentials were read
// more than credentialsTTL ago.
func (b *PushBackend) For(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*Target, error) {
	spec := fmt.Sprintf("%s/%d", cluster.UID, cluster.Generation)
	b.mu.Lock()
	cached, ok := b.targets[cluster.Name]
	b.mu.Unlock()
	if ok && cached.spec == spec && time.Now().Before(cached.expires) {
		return cached.target, nil
	}
	cfg, err := clusterstatus.MemberConfig(ctx, b.Hub, cluster)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(err.Error())
	}
	// Watches and exec sessions last as long as the caller wants; the hub's request timeout bounds the rest.
	cfg.Timeout = 0
	target, err := TargetFor(cfg)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("credentials of push cluster %s: %v", cluster.Name, err))
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.targets == nil {
		b.targets = map[string]cachedTarget{}
	}
	b.targets[cluster.Name] = cachedTarget{target: target, spec: spec, expires: time.Now().Add(credentialsTTL)}
	return target, nil
}
