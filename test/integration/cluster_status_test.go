package integration

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterstatus"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestClusterStatusWritersKeepEachOthersFields: the agent's reporter and the hub's health monitor both write
// a Cluster's status, each only what it owns, by server-side apply under its own field manager: the reporter's
// facts survive the monitor's Ready writes and the other way round, and neither replaces the status whole.
// The monitor's health taint comes and goes beside a person's taint, which stays.
func TestClusterStatusWritersKeepEachOthersFields(t *testing.T) {
	ctx := context.Background()
	agent, _ := join(t, env, "owners", "id-owners")
	key := client.ObjectKey{Name: "owners"}
	user := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	cluster := &clusterv1alpha1.Cluster{}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // as `flotilla taint` does
		if err := env.Client.Get(ctx, key, cluster); err != nil {
			return err
		}
		cluster.Spec.Taints = append(cluster.Spec.Taints, user)
		return env.Client.Update(ctx, cluster)
	})
	if err != nil {
		t.Fatal(err)
	}

	// The member is this test's control plane; its readyz fails first, as the reporter sees it.
	failing := rest.CopyConfig(env.Config)
	failing.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripper(func(r *http.Request) (*http.Response, error) {
			if r.URL.Path == "/readyz" {
				return &http.Response{StatusCode: http.StatusInternalServerError, Body: io.NopCloser(strings.NewReader("[-]etcd failed")), Request: r}, nil
			}
			return rt.RoundTrip(r)
		})
	})
	failingMember, err := kubernetes.NewForConfig(failing)
	if err != nil {
		t.Fatal(err)
	}
	report := func(member kubernetes.Interface, version string) {
		t.Helper()
		r := &clusterstatus.Reporter{Hub: agent, Member: member, Cluster: "owners", Holder: "agent-owners", AgentVersion: version}
		if err := r.ReportOnce(ctx); err != nil {
			t.Fatal(err)
		}
	}
	healthIs := func(want metav1.ConditionStatus, taint string) func() error {
		return func() error {
			if err := env.Client.Get(ctx, key, cluster); err != nil {
				return err
			}
			if c := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady); c == nil || c.Status != want {
				return fmt.Errorf("Ready %+v, want %s", c, want)
			}
			var keys []string
			for _, t := range cluster.Spec.Taints {
				keys = append(keys, t.Key)
			}
			// A not-ready cluster may carry the key with both effects (NoExecute as the failover rate allows).
			keys = slices.Compact(keys)
			if want := []string{user.Key, taint}; !slices.Equal(keys, slices.DeleteFunc(want, func(k string) bool { return k == "" })) {
				return fmt.Errorf("taints %v, want %v", keys, want)
			}
			return nil
		}
	}

	// The failing member reports on every look, as an agent's heartbeat would, so a busy monitor never sees
	// the heartbeat lapse instead.
	notReady := healthIs(metav1.ConditionFalse, clusterv1alpha1.TaintClusterNotReady)
	var reported time.Time
	testenv.Eventually(t, time.Minute, "owners not ready with the not-ready taint", func() error {
		if time.Since(reported) > time.Second {
			report(failingMember, "test")
			reported = time.Now()
		}
		return notReady()
	})
	if cluster.Status.KubernetesVersion == "" || cluster.Status.Health == nil || len(cluster.Status.APIEnablements) == 0 ||
		!meta.IsStatusConditionTrue(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionAPIsComplete) {
		t.Fatalf("the monitor's write lost the reporter's facts: %+v", cluster.Status)
	}

	report(env.Kube, "test")
	testenv.Eventually(t, time.Minute, "owners ready without the health taint", healthIs(metav1.ConditionTrue, ""))
	ready := *meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady)

	report(env.Kube, "test-2")
	if err := env.Client.Get(ctx, key, cluster); err != nil {
		t.Fatal(err)
	}
	if cluster.Status.AgentVersion != "test-2" || cluster.Status.Health.Readyz != "ok" || cluster.Status.KubernetesVersion == "" {
		t.Fatalf("the reporter's facts were not written: %+v", cluster.Status)
	}
	// The monitor may apply Ready again from a cache that has not seen its own last write yet (with a later
	// transition time); that the reporter never writes Ready is proven by the field owners below.
	if c := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionReady); c == nil || c.Status != ready.Status || c.Reason != ready.Reason {
		t.Fatalf("the reporter's write changed the monitor's Ready condition: %+v, was %+v", c, ready)
	}

	owners := map[string]string{}
	for _, f := range cluster.ManagedFields {
		if f.Subresource != "status" {
			continue
		}
		if f.Operation != metav1.ManagedFieldsOperationApply {
			t.Errorf("%s wrote the status with %s, not by server-side apply", f.Manager, f.Operation)
		}
		owners[f.Manager] = string(f.FieldsV1.Raw)
	}
	facts, health := owners[clusterstatus.AgentFieldManager], owners[clusterstatus.HealthFieldManager]
	if !strings.Contains(facts, `"f:kubernetesVersion"`) || !strings.Contains(facts, `"k:{\"type\":\"APIsComplete\"}"`) || strings.Contains(facts, `Ready`) {
		t.Errorf("the agent's fields: %s", facts)
	}
	if !strings.Contains(health, `"k:{\"type\":\"Ready\"}"`) || strings.Contains(health, "kubernetesVersion") || strings.Contains(health, "APIsComplete") {
		t.Errorf("the health monitor's fields: %s", health)
	}
	// A Pull cluster without an agent's tunnel also has the tunnel controller's TunnelConnected=False.
	if tunnel := owners[clusterstatus.TunnelFieldManager]; !strings.Contains(tunnel, `"k:{\"type\":\"TunnelConnected\"}"`) || strings.Contains(tunnel, "Ready") || strings.Contains(tunnel, "kubernetesVersion") {
		t.Errorf("the tunnel controller's fields: %s", tunnel)
	}
	if len(owners) != 3 {
		t.Errorf("status managers %v, want the agent, the health monitor and the tunnel controller", owners)
	}
}
