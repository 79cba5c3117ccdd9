package bench

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/flotilla-io/flotilla/internal/bench/measure"
)

// The benchmark changes templates as a namespace user, not as the hub admin: the admin is in system:masters,
// whose requests API Priority and Fairness exempts, so only a user's requests show whether Flotilla's
// controllers leave users their share of the hub in a burst.
const (
	benchUser = "flotilla-bench-user"
	// idleNamespace holds the reference creates: no policy selects it, so nothing is propagated from it.
	idleNamespace = "bench-idle"
)

// UserCreates is how long the user's creates of the create wave took, seen from the user's client, in the
// burst and, for reference, the same creates on an idle hub (into a namespace no policy selects).
type UserCreates struct {
	Burst measure.ClientTimes `json:"burst"`
	Idle  measure.ClientTimes `json:"idle"`
	// Ratio compares the burst with the idle hub (goal ≤ 1.5): the time from the first create sent to the
	// last answered, or with one object at a time the median create.
	Ratio float64 `json:"ratio"`
}

// compare is the ratio of burst to idle: of the whole span, or with one object at a time of the median.
func compare(burst, idle measure.ClientTimes, sequential bool) float64 {
	if sequential {
		if idle.Each["p50"] == 0 {
			return 0
		}
		return burst.Each["p50"] / idle.Each["p50"]
	}
	if idle.Seconds == 0 {
		return 0
	}
	return burst.Seconds / idle.Seconds
}

// setupUser makes the benchmark's namespaces, lets the benchmark's user change Deployments in them, and
// returns a client that acts as that user (the admin impersonating it: API Priority and Fairness, like
// RBAC, sees the impersonated user).
func setupUser(ctx context.Context, admin kubernetes.Interface, adminConfig *rest.Config) (kubernetes.Interface, error) {
	for _, ns := range []string{benchNamespace, idleNamespace} {
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Name: benchUser, Namespace: ns},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{"apps"}, Resources: []string{"deployments"},
				Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}}},
		}
		if _, err := admin.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
		binding := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: benchUser, Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: benchUser},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: benchUser}},
		}
		if _, err := admin.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			return nil, err
		}
	}
	cfg := rest.CopyConfig(adminConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: benchUser, Groups: []string{"system:authenticated"}}
	return kubernetes.NewForConfig(cfg)
}

// idleCreates times the create wave's creates on the hub at rest, into a namespace no policy selects, the
// same way the wave sends them (all at once or one at a time), then deletes them and waits until they are
// gone.
func (p *propagation) idleCreates(ctx context.Context) (measure.ClientTimes, error) {
	timer := &measure.ClientTimer{}
	p.timer.Store(timer)
	defer p.timer.Store(nil)
	var err error
	if p.o.Sequential {
		for i := range p.o.Objects {
			if err = p.act(ctx, createWave, idleNamespace, objectName(i)); err != nil {
				break
			}
		}
	} else {
		err = p.actOnAll(ctx, createWave, idleNamespace)
	}
	if err != nil {
		return measure.ClientTimes{}, fmt.Errorf("creates on the idle hub: %w", err)
	}
	deployments := p.fleet.kube.AppsV1().Deployments(idleNamespace)
	if err := deployments.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		return measure.ClientTimes{}, err
	}
	for {
		left, err := deployments.List(ctx, metav1.ListOptions{})
		if err != nil {
			return measure.ClientTimes{}, err
		}
		if len(left.Items) == 0 {
			return timer.Times(), nil
		}
		if err := sleep(ctx, 100*time.Millisecond); err != nil {
			return measure.ClientTimes{}, err
		}
	}
}
