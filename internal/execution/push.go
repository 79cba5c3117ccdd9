package execution

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"strconv"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
)

// memberTTL is how long the push executor uses a member's clients before reading its credentials again. The
// clients, and the watches on what was applied, are built anew only when the credentials changed.
const memberTTL = time.Minute

// SetupPush registers the hub's executor, which applies the Works of Push clusters with the credentials the
// hub stores for them, marking what it applies with hubID. Works of Pull clusters are left to their agents. A
// bounded pool of workers keeps one slow member from holding up the others.
func SetupPush(mgr ctrl.Manager, hubID string) error {
	if hubID == "" {
		return errors.New("push-execution: the hub's ID is unknown")
	}
	e := &Executor{Hub: mgr.GetClient(), FieldManager: workv1alpha1.ControllerFieldManager("push-execution"), HubID: hubID}
	members := &pushMembers{client: mgr.GetClient(), secrets: mgr.GetAPIReader(), notify: e.Notify, cache: map[string]cachedMember{}}
	e.MemberFor = members.memberFor
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		<-ctx.Done()
		members.stopAll()
		return nil
	})); err != nil {
		return err
	}
	return e.SetupWithManager(mgr, "push-execution", controller.Options{})
}

type cachedMember struct {
	member *Member
	// credentials identify the configuration the member was built from.
	credentials string
	checked     time.Time
}

type pushMembers struct {
	client  client.Client
	secrets client.Reader
	notify  func(types.NamespacedName)
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
		if err == nil || apierrors.IsNotFound(err) {
			p.drop(name) // gone or pulled now: its objects stay as they are, unwatched
		}
		return nil, client.IgnoreNotFound(err)
	}
	p.mu.Lock()
	cached, ok := p.cache[name]
	p.mu.Unlock()
	if ok && time.Since(cached.checked) < memberTTL {
		return cached.member, nil
	}
	cfg, err := clusterstatus.MemberConfig(ctx, p.secrets, cluster)
	if err != nil {
		return nil, err
	}
	credentials := Fingerprint(cluster, cfg)
	p.mu.Lock()
	defer p.mu.Unlock()
	cached, ok = p.cache[name] // another worker may have been here meanwhile
	if !ok || cached.credentials != credentials {
		m, err := NewMember(cfg)
		if err != nil {
			return nil, err
		}
		m.WatchApplied(p.notify)
		if ok {
			cached.member.Stop()
		}
		cached.member, cached.credentials = m, credentials
	}
	cached.checked = time.Now()
	p.cache[name] = cached
	return cached.member, nil
}

func (p *pushMembers) drop(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if cached, ok := p.cache[name]; ok {
		cached.member.Stop()
		delete(p.cache, name)
	}
}

func (p *pushMembers) stopAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for name, cached := range p.cache {
		cached.member.Stop()
		delete(p.cache, name)
	}
}

// Fingerprint identifies what a member's clients are built from: the endpoint, proxy and TLS settings of the
// cluster and the credentials of its Secret.
func Fingerprint(cluster *clusterv1alpha1.Cluster, cfg *rest.Config) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(cfg.Host), []byte(cluster.Spec.ProxyURL), []byte(strconv.FormatBool(cfg.Insecure)), []byte(cfg.ServerName),
		cfg.CAData, cfg.CertData, cfg.KeyData, []byte(cfg.BearerToken), []byte(cfg.Username), []byte(cfg.Password)} {
		_ = binary.Write(h, binary.BigEndian, uint64(len(part)))
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}
