package integration

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEventsAreRateLimitedPerNamespace floods one namespace with events, as a misbehaving agent could flood
// its cluster's namespace: the hub answers 429 once the namespace's burst is spent, while another namespace
// still takes events.
func TestEventsAreRateLimitedPerNamespace(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "event-flood")
	createNamespace(t, "event-quiet")
	event := func(ns string, i int) *corev1.Event {
		return &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("e-%d", i)},
			InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: "x"},
			Reason:         "Flood", Message: "one of many", Type: corev1.EventTypeNormal,
		}
	}
	limited := false
	for i := 0; i < 3000 && !limited; i++ {
		_, err := env.Kube.CoreV1().Events("event-flood").Create(ctx, event("event-flood", i), metav1.CreateOptions{})
		switch {
		case apierrors.IsTooManyRequests(err):
			limited = true
		case err != nil:
			t.Fatalf("event %d: %v", i, err)
		}
	}
	if !limited {
		t.Fatal("3000 events in one namespace were all accepted: events are not rate-limited")
	}
	if _, err := env.Kube.CoreV1().Events("event-quiet").Create(ctx, event("event-quiet", 0), metav1.CreateOptions{}); err != nil {
		t.Fatalf("an event in another namespace: %v", err)
	}
}
