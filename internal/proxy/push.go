package proxy

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
)

// PushBackend reaches push members with the credentials the hub stores for them, which must allow
// impersonating users, groups and user extras on the member.
type PushBackend struct {
	targets *members.Cache[*Target]
}

// NewPushBackend returns a PushBackend that reads the Secrets named by push Clusters with secrets. It holds
// each member's transports as members.Cache does: reading the Secret on every request would double the cost
// of a proxied GET.
func NewPushBackend(secrets client.Reader) *PushBackend {
	return &PushBackend{targets: members.NewCache(members.FromSecrets(secrets), func(cluster string, cfg *rest.Config) (*Target, error) {
		// Watches and exec sessions last as long as the caller wants; the hub's request timeout bounds the rest.
		cfg.Timeout = 0
		target, err := TargetFor(cfg)
		if err != nil {
			return nil, fmt.Errorf("credentials of push cluster %s: %w", cluster, err)
		}
		return target, nil
	}, nil)}
}

// For returns the Target of a push cluster.
func (b *PushBackend) For(ctx context.Context, cluster *clusterv1alpha1.Cluster) (*Target, error) {
	target, err := b.targets.Get(ctx, cluster)
	if err != nil {
		return nil, apierrors.NewServiceUnavailable(err.Error())
	}
	return target, nil
}
