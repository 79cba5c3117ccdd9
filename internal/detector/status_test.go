package detector

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
)

// TestClaimsWithinADelayWakeThePolicyStatusOnce: the claims a burst moves to a policy, one after another,
// wake its status controller once per delay (one status write), and another policy on its own.
func TestClaimsWithinADelayWakeThePolicyStatusOnce(t *testing.T) {
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	defer q.ShutDown()
	h := policyStatusEvents(200 * time.Millisecond)
	for range 20 {
		h.Generic(context.Background(), event.GenericEvent{Object: &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "all"}}}, q)
	}
	h.Generic(context.Background(), event.GenericEvent{Object: &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}}, q)
	if q.Len() != 0 {
		t.Fatalf("%d policies queued at once, want none before the delay", q.Len())
	}
	time.Sleep(400 * time.Millisecond)
	if q.Len() != 2 {
		t.Fatalf("%d policies queued after the delay, want 2: each once", q.Len())
	}
	for range 2 {
		req, _ := q.Get()
		if req.Name != "all" && req.Name != "fleet" {
			t.Fatalf("request %v", req)
		}
		q.Done(req)
	}
}
