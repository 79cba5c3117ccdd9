package bench

import (
	"context"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/bench/measure"
)

// Stages of a failover, per object, from the freeze; cleanup from the resume.
const (
	// stageRescheduled: the binding's placement no longer holds the frozen member.
	stageRescheduled = "rescheduled"
	// stageReplacementApplied: every cluster of that placement runs the Deployment with its new replica count.
	stageReplacementApplied = "replacementApplied"
	// stageHubHealthy: the hub says the replacement runs in full: the binding is Healthy at the generation
	// of the new placement and the template's status counts every replica available.
	stageHubHealthy = "hubHealthy"
	// stageReplacementAvailable: the hub says so and it is true: every cluster of the new placement has all
	// its replicas available.
	stageReplacementAvailable = "replacementAvailable"
	// stageCleanedUp: the evicted copy is gone from the resumed member.
	stageCleanedUp = "cleanedUp"
)

var failoverStages = []string{stageRescheduled, stageReplacementApplied, stageHubHealthy, stageReplacementAvailable}

// objectCluster names one object's copy in one member.
type objectCluster struct{ object, cluster string }

// moves follows, for every object, its placement, the hub's view of its health and its copies in the live
// members, and marks each failover stage in the recorder once the object reaches it. The recorder ignores
// marks of objects whose failover has not begun, so the same rules run before and after the freeze.
type moves struct {
	frozen   string
	replicas int32
	recorder *measure.Recorder

	mu sync.Mutex
	// placed is each object's placement as the scheduler last wrote it; healthy whether the binding is
	// Healthy at its current generation; full whether the template's status counts every replica available.
	placed  map[string]map[string]int32
	healthy map[string]bool
	full    map[string]bool
	// running and available are the replicas each live member's copy asks for and has available.
	running, available map[objectCluster]int32
	// taintedAt is when the frozen member first carried a NoExecute health taint after the failover began.
	taintedAt time.Time
	began     bool
	// least is the fewest replicas available in the live members at any change of their copies while
	// tracking: from the freeze until every replacement is available.
	least    int
	tracking bool
	// early are the objects the hub said were healthy in their new placement before the members ran it.
	early map[string]bool
}

func newMoves(frozen string, replicas int32, r *measure.Recorder) *moves {
	return &moves{frozen: frozen, replicas: replicas, recorder: r, placed: map[string]map[string]int32{},
		healthy: map[string]bool{}, full: map[string]bool{}, running: map[objectCluster]int32{}, available: map[objectCluster]int32{},
		early: map[string]bool{}}
}

// begin starts the clock of every object: the member was frozen now.
func (m *moves) begin(objects []string) {
	m.mu.Lock()
	m.began, m.tracking, m.least = true, true, m.liveAvailable()
	m.mu.Unlock()
	for _, o := range objects {
		m.recorder.Begin(o)
	}
	for _, o := range objects {
		m.mu.Lock()
		m.evaluate(o)
		m.mu.Unlock()
	}
}

// binding records a binding's placement and health.
func (m *moves) binding(object string, spec *workv1alpha1.ResourceBindingSpec, status *workv1alpha1.ResourceBindingStatus, generation int64, deleted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if deleted {
		delete(m.placed, object)
		return
	}
	placed := map[string]int32{}
	for _, t := range spec.Clusters {
		placed[t.Name] = t.Replicas
	}
	m.placed[object] = placed
	c := meta.FindStatusCondition(status.Conditions, workv1alpha1.ConditionHealthy)
	// A Healthy condition of an earlier generation speaks of the placement before the move.
	m.healthy[object] = c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation
	m.evaluate(object)
}

// template records whether the template's status counts every replica available.
func (m *moves) template(object string, status *appsv1.DeploymentStatus) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.full[object] = status.AvailableReplicas >= m.replicas && status.UpdatedReplicas >= m.replicas
	m.evaluate(object)
}

// member records a live member's copy of an object; a deleted copy runs nothing.
func (m *moves) member(object, cluster string, d *appsv1.Deployment, deleted bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := objectCluster{object, cluster}
	if deleted {
		delete(m.running, k)
		delete(m.available, k)
	} else {
		m.running[k] = ptr.Deref(d.Spec.Replicas, 1)
		m.available[k] = d.Status.AvailableReplicas
	}
	if m.tracking {
		m.least = min(m.least, m.liveAvailable())
	}
	m.evaluate(object)
}

// cluster records the frozen member's taints.
func (m *moves) cluster(c *clusterv1alpha1.Cluster) {
	if c.Name != m.frozen {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.began || !m.taintedAt.IsZero() {
		return
	}
	if slices.ContainsFunc(c.Spec.Taints, func(t corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoExecute &&
			(t.Key == clusterv1alpha1.TaintClusterUnreachable || t.Key == clusterv1alpha1.TaintClusterNotReady)
	}) {
		m.taintedAt = time.Now()
	}
}

// evaluate marks the stages the object reached; m.mu is held.
func (m *moves) evaluate(object string) {
	placed := m.placed[object]
	if len(placed) == 0 {
		return
	}
	if _, onFrozen := placed[m.frozen]; onFrozen {
		return
	}
	m.recorder.Mark(stageRescheduled, object, "")
	applied, available := true, true
	for cluster, replicas := range placed {
		k := objectCluster{object, cluster}
		got, ok := m.running[k]
		applied = applied && ok && got == replicas
		available = available && ok && got == replicas && m.available[k] >= replicas
	}
	if applied {
		m.recorder.Mark(stageReplacementApplied, object, "")
	}
	if !m.healthy[object] || !m.full[object] {
		return
	}
	// The hub's word alone is not taken: a Work status from before the move can make it say Healthy while
	// a member still runs the old replica count.
	if m.began && !available && !m.recorder.Reached(stageHubHealthy, object, []string{""}) {
		m.early[object] = true
	}
	m.recorder.Mark(stageHubHealthy, object, "")
	if available {
		m.recorder.Mark(stageReplacementAvailable, object, "")
	}
}

// ready says whether every object runs in full with replicas on the frozen member, and returns the replicas
// placed elsewhere: what must stay available while the frozen member's share moves.
func (m *moves) ready(objects []string) (bool, int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	surviving := 0
	for _, o := range objects {
		if m.placed[o][m.frozen] == 0 || !m.healthy[o] || !m.full[o] {
			return false, 0
		}
		for cluster, replicas := range m.placed[o] {
			if cluster != m.frozen {
				surviving += int(replicas)
			}
		}
	}
	// The live members' watches show it too, or a lagging watch would read as a gap at the freeze.
	return m.liveAvailable() >= surviving, surviving
}

// liveAvailable is the sum of the available replicas of every copy in the live members; m.mu is held.
func (m *moves) liveAvailable() int {
	sum := 0
	for k, n := range m.available {
		if k.cluster != m.frozen {
			sum += int(n)
		}
	}
	return sum
}

func (m *moves) tainted() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.taintedAt
}

// watch feeds the moves from watches on the hub (Clusters, bindings, templates) and on the live members.
// The frozen member is not watched: its API stops answering.
func (m *moves) watch(ctx context.Context, hub *rest.Config, members map[string]*rest.Config) error {
	err := watchKind(ctx, hub, &clusterv1alpha1.Cluster{}, "", func(obj client.Object, deleted bool) {
		if !deleted {
			m.cluster(obj.(*clusterv1alpha1.Cluster))
		}
	})
	if err != nil {
		return err
	}
	err = watchKind(ctx, hub, &workv1alpha1.ResourceBinding{}, benchNamespace, func(obj client.Object, deleted bool) {
		rb := obj.(*workv1alpha1.ResourceBinding)
		m.binding(deploymentOfBinding(rb.Name), &rb.Spec, &rb.Status, rb.Generation, deleted)
	})
	if err != nil {
		return err
	}
	err = watchKind(ctx, hub, &appsv1.Deployment{}, benchNamespace, func(obj client.Object, deleted bool) {
		if d := obj.(*appsv1.Deployment); !deleted {
			m.template(d.Name, &d.Status)
		}
	})
	if err != nil {
		return err
	}
	for name, cfg := range members {
		if name == m.frozen {
			continue
		}
		err := watchKind(ctx, cfg, &appsv1.Deployment{}, benchNamespace, func(obj client.Object, deleted bool) {
			d := obj.(*appsv1.Deployment)
			m.member(d.Name, name, d, deleted)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// hubEarly is how many objects the hub said were healthy in their new placement before the members ran it.
func (m *moves) hubEarly() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.early)
}

// stopTracking ends the tracking of the available replicas and returns the fewest seen.
func (m *moves) stopTracking() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tracking = false
	return m.least
}
