package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// firstSeen watches the members' copies of a Deployment and records, per member, when each pod-template
// fingerprint (image and node selector) first appeared there.
type firstSeen struct {
	mu   sync.Mutex
	seen map[string]time.Time // member/fingerprint
}

func fingerprint(image string, selector map[string]string) string {
	return fmt.Sprintf("%s%v", image, selector)
}

func watchMembers(t *testing.T, members []*framework.Cluster, namespace, name string) *firstSeen {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	s := &firstSeen{seen: map[string]time.Time{}}
	for _, m := range members {
		go func() {
			for ctx.Err() == nil {
				if _, d, err := replicasIn(ctx, m, namespace, name); err == nil && d != nil {
					spec := d.Spec.Template.Spec
					key := m.Name + "/" + fingerprint(spec.Containers[0].Image, spec.NodeSelector)
					s.mu.Lock()
					if _, ok := s.seen[key]; !ok {
						s.seen[key] = time.Now()
					}
					s.mu.Unlock()
				}
				time.Sleep(100 * time.Millisecond)
			}
		}()
	}
	return s
}

func (s *firstSeen) at(member, print string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	at, ok := s.seen[member+"/"+print]
	return at, ok
}

// waitRollout waits until the template's binding has condition True.
func waitRollout(t *testing.T, hub client.Client, namespace, name, condition string, within time.Duration) {
	t.Helper()
	testenv.Eventually(t, within, condition, func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := hub.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: workv1alpha1.BindingName(schema.GroupKind{Group: "apps", Kind: "Deployment"}, name)}, b); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(b.Status.Conditions, condition) {
			return fmt.Errorf("conditions %+v", b.Status.Conditions)
		}
		return nil
	})
}

// TestProgressiveRollout on three members, Progressive, one cluster at a time, minSuccessTime 5 s,
// progressDeadline 30 s, maxFailures 0: a good image change reaches m1, then m2 only after m1 was healthy
// for 5 s, then m3; a change that can never become healthy (a node selector no node matches) reaches m1 only,
// the rollout fails, m2 and m3 keep the previous spec through the deadline and after, and `flotilla rollout
// undo` brings m1 back; a paused rollout holds its next wave until resumed.
func TestProgressiveRollout(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	hub := f.hub.Client
	members := []*framework.Cluster{f.m1, f.m2, f.m3}
	f.createDeployment(t, deployment(f.ns, "roll", 1))
	f.createPolicy(t, "roll", deploymentSelector("roll"), placementOn("m1", "m2", "m3"), func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.Rollout = &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive, Progressive: &policyv1alpha1.ProgressiveRollout{
			MaxConcurrency: ptr.To(intstr.FromInt32(1)), MaxFailures: ptr.To(intstr.FromInt32(0)),
			MinSuccessTime: metav1.Duration{Duration: 5 * time.Second}, ProgressDeadline: &metav1.Duration{Duration: 30 * time.Second}}}
	})
	waitPlaced(t, f.ns, "roll", map[*framework.Cluster]int32{f.m1: 1, f.m2: 1, f.m3: 1})
	waitRollout(t, hub, f.ns, "roll", workv1alpha1.ConditionRolloutComplete, time.Minute)
	seen := watchMembers(t, members, f.ns, "roll")
	setPodSpec := func(image string, nodeSelector map[string]string) {
		t.Helper()
		patch := fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"web","image":%q}],"nodeSelector":%s}}}}`, image, jsonMap(nodeSelector))
		if _, err := f.hub.Kube.AppsV1().Deployments(f.ns).Patch(ctx, "roll", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	reached := func(m *framework.Cluster, print string) time.Time {
		t.Helper()
		var at time.Time
		testenv.Eventually(t, 2*time.Minute, m.Name+" reached by "+print, func() error {
			var ok bool
			if at, ok = seen.at(m.Name, print); !ok {
				return fmt.Errorf("not yet")
			}
			return nil
		})
		return at
	}

	// A good change, one member at a time, each 5 s healthy before the next.
	good := fingerprint("nginx:1.27", nil)
	setPodSpec("nginx:1.27", nil)
	at1, at2, at3 := reached(f.m1, good), reached(f.m2, good), reached(f.m3, good)
	if at2.Sub(at1) < 5*time.Second || at3.Sub(at2) < 5*time.Second {
		t.Errorf("updates at m1 %v, m2 +%v, m3 +%v: want each at least minSuccessTime (5s) after the previous",
			at1.Format(time.StampMilli), at2.Sub(at1), at3.Sub(at2))
	}
	waitRollout(t, hub, f.ns, "roll", workv1alpha1.ConditionRolloutComplete, time.Minute)

	// A change that never becomes healthy: m1 only; failed after the deadline; m2 and m3 keep the good spec.
	bad := fingerprint("nginx:1.27", map[string]string{"flotilla.io/no-such-node": "x"})
	setPodSpec("nginx:1.27", map[string]string{"flotilla.io/no-such-node": "x"})
	badAt := reached(f.m1, bad)
	waitRollout(t, hub, f.ns, "roll", workv1alpha1.ConditionRolloutFailed, time.Minute)
	// The hub starts the deadline's clock when it writes m1's Work, a moment before m1 shows the change.
	if since := time.Since(badAt); since < 25*time.Second {
		t.Errorf("the rollout failed %v after m1 was updated, well before progressDeadline (30s)", since)
	}
	time.Sleep(2 * time.Second) // a wave wrongly started after the failure would show now
	for _, m := range []*framework.Cluster{f.m2, f.m3} {
		if _, ok := seen.at(m.Name, bad); ok {
			t.Errorf("%s got the failing spec", m.Name)
		}
	}

	// Undo puts the good spec back on the template; m1 gets it again.
	out := f.hub.Flotilla("rollout", "undo", "deployment/roll", "-n", f.ns)
	if !strings.Contains(out, "rolled back") {
		t.Errorf("flotilla rollout undo said:\n%s", out)
	}
	testenv.Eventually(t, 2*time.Minute, "m1 back on the good spec", func() error {
		_, d, err := replicasIn(ctx, f.m1, f.ns, "roll")
		if err != nil || d == nil || len(d.Spec.Template.Spec.NodeSelector) != 0 {
			return fmt.Errorf("m1's copy %v (%v)", d, err)
		}
		return nil
	})
	waitRollout(t, hub, f.ns, "roll", workv1alpha1.ConditionRolloutComplete, time.Minute)

	// Paused: the next change reaches no member until resumed.
	f.hub.Flotilla("rollout", "pause", "deployment/roll", "-n", f.ns)
	waitRollout(t, hub, f.ns, "roll", workv1alpha1.ConditionRolloutPaused, time.Minute)
	next := fingerprint("nginx:1.28", nil)
	setPodSpec("nginx:1.28", nil)
	waitRollout(t, hub, f.ns, "roll", workv1alpha1.ConditionRolloutProgressing, time.Minute)
	time.Sleep(2 * time.Second)
	if _, ok := seen.at(f.m1.Name, next); ok {
		t.Fatal("a paused rollout reached m1")
	}
	// The hub's Deployment keeps kubectl rollout status waiting: its status has not observed the change.
	d, err := f.hub.Kube.AppsV1().Deployments(f.ns).Get(ctx, "roll", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if d.Status.ObservedGeneration >= d.Generation {
		t.Errorf("the hub's Deployment reports generation %d observed during the rollout of %d", d.Status.ObservedGeneration, d.Generation)
	}
	f.hub.Flotilla("rollout", "resume", "deployment/roll", "-n", f.ns)
	reached(f.m1, next)
}

func jsonMap(m map[string]string) string {
	if m == nil {
		return "null"
	}
	var parts []string
	for k, v := range m {
		parts = append(parts, fmt.Sprintf("%q:%q", k, v))
	}
	return "{" + strings.Join(parts, ",") + "}"
}
