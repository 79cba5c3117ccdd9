package execution

import (
	"context"
	"sync"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
)

// memberTTL is how long the push executor reuses a member's clients before reading its credentials again.
const memberTTL = time.Minute

// SetupPush registers the hub's executor, which applies the Works of Push clusters with the credentials the
// hub stores for them. Works of Pull clusters are left to their agents. A bounded pool of workers keeps one
// slow member from holding up the others.
func SetupPush(mgr ctrl.Manager) error {
	members := &pushMembers{client: mgr.GetClient(), secrets: mgr.GetAPIReader(), cache: map[string]cachedMember{}}
	e := &Executor{Hub: mgr.GetClient(), MemberFor: members.memberFor}
	return ctrl.NewControllerManagedBy(mgr).Named("push-execution").For(&workv1alpha1.Work{}).
		Complete(e)
}

type cachedMember struct {
	member  *Member
	expires time.Time
}

type pushMembers struct {
	client  client.Client
	secrets client.Reader
	mu      sync.Mutex
	cache   map[string]cachedMember
}

func (p *pushMembers) memberFor(ctx context.Context, namespace string) (*Member, error) {
	name, ok := clusterv1alpha1.ClusterOfNamespace(namespace)
	if !ok {
		return nil, nil
	}
	cluster := &clusterv1alpha1.Cluster{}
	if err := p.client.Get(ctx, client.ObjectKey{Name: name}, cluster); err != nil || cluster.Spec.SyncMode != clusterv1alpha1.Push {
		return nil, client.IgnoreNotFound(err)
	}
	p.mu.Lock()
	cached, ok := p.cache[name]
	p.mu.Unlock()
	if ok && time.Now().Before(cached.expires) {
		return cached.member, nil
	}
	cfg, err := clusterstatus.MemberConfig(ctx, p.secrets, cluster)
	if err != nil {
		return nil, err
	}
	m, err := NewMember(cfg)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	p.cache[name] = cachedMember{member: m, expires: time.Now().Add(memberTTL)}
	p.mu.Unlock()
	return m, nil
}
