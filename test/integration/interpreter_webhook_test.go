package integration

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

const webhookGroup = "webhook.example.io"

// gadgetWebhook is a resource interpreter webhook as one is written for Karmada: a Gadget has spec.replicas
// replicas of 100m cpu each, and is healthy once status.ready reaches spec.replicas. While slow is set it
// answers InterpretHealth only after 3 seconds.
func gadgetWebhook(t *testing.T, slow *atomic.Bool) *httptest.Server {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		review := &configv1alpha1.ResourceInterpreterContext{}
		if err := json.NewDecoder(r.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "not a ResourceInterpreterContext", http.StatusBadRequest)
			return
		}
		req := review.Request
		obj := &unstructured.Unstructured{}
		_ = obj.UnmarshalJSON(req.Object.Raw)
		replicas, _, _ := unstructured.NestedInt64(obj.Object, "spec", "replicas")
		resp := &configv1alpha1.ResourceInterpreterResponse{UID: req.UID, Successful: true}
		switch req.Operation {
		case configv1alpha1.InterpreterOperationInterpretReplica:
			resp.Replicas = ptr.To(int32(replicas))
			resp.ReplicaRequirements = &workv1alpha1.ReplicaRequirements{ResourceRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}
		case configv1alpha1.InterpreterOperationInterpretHealth:
			if slow.Load() {
				select {
				case <-r.Context().Done():
				case <-time.After(3 * time.Second):
				}
			}
			ready, _, _ := unstructured.NestedInt64(obj.Object, "status", "ready")
			resp.Healthy = ptr.To(ready >= replicas)
		default:
			resp.Successful, resp.Status = false, &configv1alpha1.RequestStatus{Message: "not asked for " + string(req.Operation), Code: 400}
		}
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(review)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestInterpreterWebhook: a Karmada ResourceInterpreterWebhookConfiguration, written unchanged through
// config.karmada.io, is mirrored onto an InterpreterWebhookConfiguration; its webhook (HTTPS, trusted through
// the caBundle) tells the hub a CRD's replicas, which the binding divides, and judges each cluster's report
// healthy or not; when the webhook stops answering within timeoutSeconds, failurePolicy Fail marks the
// binding Interpreted=False naming it, and Ignore lets the agents' built-in judgement stand. Configurations
// the hub could not call are refused when written.
func TestInterpreterWebhook(t *testing.T) {
	ctx := context.Background()
	const namespace = "interpreter-webhook"
	crd := widgetCRD(webhookGroup, "Gadget")
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
	}
	createCRD(t, crd)
	createNamespace(t, namespace)
	clusters := []string{"webhook-a", "webhook-b"}
	for _, name := range clusters {
		placeableCluster(t, name, map[string]string{"interpreter-webhook": "yes"})
		updateClusterStatus(t, name, func(s *clusterv1alpha1.ClusterStatus) {
			for _, v := range []string{"v1", "v2"} {
				s.APIEnablements = append(s.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: webhookGroup + "/" + v,
					Resources: []clusterv1alpha1.APIResource{{Name: "gadgets", Kind: "Gadget"}}})
			}
		})
	}

	var slow atomic.Bool
	srv := gadgetWebhook(t, &slow)
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	caField, _ := json.Marshal(ca) // base64, as YAML carries []byte
	karmada := parseObject(t, fmt.Sprintf(`apiVersion: config.karmada.io/v1alpha1
kind: ResourceInterpreterWebhookConfiguration
metadata:
  name: gadgets
webhooks:
  - name: gadgets.example.io
    rules:
      - operations: [InterpretReplica, InterpretHealth]
        apiGroups: [%s]
        apiVersions: ["*"]
        kinds: [Gadget]
    clientConfig:
      url: %s/interpret
      caBundle: %s
    interpreterContextVersions: [v1alpha1]
    timeoutSeconds: 1
`, webhookGroup, srv.URL, caField))
	if err := env.Client.Create(ctx, karmada); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), karmada) })
	twin := &configv1alpha1.InterpreterWebhookConfiguration{}
	testenv.Eventually(t, hangGuard, "the twin of the Karmada webhook configuration", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Name: "gadgets"}, twin)
	})
	if !metav1.IsControlledBy(twin, karmada) || len(twin.Webhooks) != 1 || twin.Webhooks[0].ClientConfig.URL == nil ||
		*twin.Webhooks[0].ClientConfig.URL != srv.URL+"/interpret" || string(twin.Webhooks[0].ClientConfig.CABundle) != string(ca) {
		t.Fatalf("the twin is not the Karmada configuration's, owned by it: %+v", twin)
	}
	if fp := twin.Webhooks[0].FailurePolicy; fp == nil || *fp != configv1alpha1.FailurePolicyFail {
		t.Errorf("failurePolicy %v, want the default Fail (Karmada's behaviour)", fp)
	}

	create(t, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "gadgets"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: webhookGroup + "/v1", Kind: "Gadget"}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:    &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"interpreter-webhook": "yes"}}},
				ClusterTolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
					WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
						{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"webhook-a"}}, Weight: 1},
						{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{"webhook-b"}}, Weight: 2}}},
				},
			},
		}})
	gadget := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(6)}}}
	gadget.SetAPIVersion(webhookGroup + "/v1")
	gadget.SetKind("Gadget")
	gadget.SetNamespace(namespace)
	gadget.SetName("g")
	create(t, gadget)

	gk := schema.GroupKind{Group: webhookGroup, Kind: "Gadget"}
	var b *workv1alpha1.ResourceBinding
	bindingSays := func(t *testing.T, what string, check func(b *workv1alpha1.ResourceBinding) error, keep ...func()) {
		t.Helper()
		testenv.Eventually(t, hangGuard, what, func() error {
			for _, k := range keep {
				k()
			}
			var err error
			if b, err = binding(ctx, gk, namespace, "g"); err != nil {
				return err
			}
			return check(b)
		})
	}
	// The built-in rules know no replicas of a Gadget: 6 replicas of 100m divided 2/4 are the webhook's.
	bindingSays(t, "the Gadget divided 2/4 by the webhook's replicas", func(b *workv1alpha1.ResourceBinding) error {
		got := map[string]int32{}
		for _, c := range b.Spec.Clusters {
			got[c.Name] = c.Replicas
		}
		if b.Spec.Replicas != 6 || b.Spec.ReplicaRequirements == nil || b.Spec.ReplicaRequirements.ResourceRequest.Cpu().String() != "100m" ||
			got["webhook-a"] != 2 || got["webhook-b"] != 4 {
			return fmt.Errorf("replicas %d, requirements %+v, clusters %v, conditions %+v", b.Spec.Replicas, b.Spec.ReplicaRequirements, got, b.Status.Conditions)
		}
		return nil
	})

	// The test plays the agents, whose built-in rule calls any Gadget healthy; the webhook judges by ready.
	ready := map[string]int{"webhook-a": 2, "webhook-b": 1}
	report := func() {
		for cluster, n := range ready {
			w := &workv1alpha1.Work{}
			key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}
			if err := env.Client.Get(ctx, key, w); err != nil {
				continue // not written yet: the next try reports it
			}
			if c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied); c != nil && c.ObservedGeneration == w.Generation &&
				len(w.Status.ManifestStatuses) == 1 && w.Status.ManifestStatuses[0].Status != nil && strings.Contains(string(w.Status.ManifestStatuses[0].Status.Raw), fmt.Sprintf(`"ready":%d,`, n)) {
				continue
			}
			now := metav1.Now()
			w.Status = workv1alpha1.WorkStatus{
				Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied",
					ObservedGeneration: w.Generation, LastTransitionTime: now}},
				ManifestStatuses: []workv1alpha1.ManifestStatus{{
					Identifier: workv1alpha1.ResourceIdentifier{Group: webhookGroup, Version: "v2", Kind: "Gadget", Namespace: namespace, Name: "g"},
					Applied:    true, Health: workv1alpha1.ResourceHealthy,
					Status: &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"ready":%d,"at":%q}`, n, now.Format(time.RFC3339Nano))},
					Conditions: []metav1.Condition{
						{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now},
						{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue, Reason: "Observed", LastTransitionTime: now},
					},
				}},
			}
			_ = env.Client.Status().Update(ctx, w) // a conflict is retried on the next try
		}
	}
	healthOf := func(b *workv1alpha1.ResourceBinding) map[string]workv1alpha1.ResourceHealth {
		out := map[string]workv1alpha1.ResourceHealth{}
		for _, item := range b.Status.AggregatedStatus {
			out[item.ClusterName] = item.Health
		}
		return out
	}

	t.Run("health comes from the webhook", func(t *testing.T) {
		bindingSays(t, "webhook-b unhealthy by the webhook (1 of 4 ready)", func(b *workv1alpha1.ResourceBinding) error {
			got := healthOf(b)
			c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionInterpreted)
			if got["webhook-a"] != workv1alpha1.ResourceHealthy || got["webhook-b"] != workv1alpha1.ResourceUnhealthy || c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("health %v, Interpreted %+v", got, c)
			}
			return nil
		}, report)
	})

	t.Run("a webhook past its timeout fails the binding under failurePolicy Fail", func(t *testing.T) {
		slow.Store(true)
		ready["webhook-b"] = 4 // a new report wakes the status controller
		bindingSays(t, "Interpreted=False naming the webhook and its timeout", func(b *workv1alpha1.ResourceBinding) error {
			c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionInterpreted)
			if c == nil || c.Status != metav1.ConditionFalse ||
				!strings.Contains(c.Message, "InterpreterWebhookConfiguration gadgets (webhook gadgets.example.io): InterpretHealth: no answer within timeoutSeconds (1s)") {
				return fmt.Errorf("Interpreted %+v", c)
			}
			return nil
		}, report)
		// The division does not depend on the failing operation: it stays.
		if b.Spec.Replicas != 6 || len(b.Spec.Clusters) != 2 {
			t.Errorf("binding spec changed: %d replicas over %v", b.Spec.Replicas, b.Spec.Clusters)
		}
	})

	t.Run("failurePolicy Ignore falls back to the built-in rule", func(t *testing.T) {
		ready["webhook-b"] = 1 // the webhook would call it unhealthy; the agent's built-in rule calls it healthy
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(karmada), karmada); err != nil {
			t.Fatal(err)
		}
		hooks, _, _ := unstructured.NestedSlice(karmada.Object, "webhooks")
		hooks[0].(map[string]any)["failurePolicy"] = "Ignore"
		if err := unstructured.SetNestedSlice(karmada.Object, hooks, "webhooks"); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Update(ctx, karmada); err != nil {
			t.Fatal(err)
		}
		bindingSays(t, "the agents' judgement stands and Interpreted is True", func(b *workv1alpha1.ResourceBinding) error {
			got := healthOf(b)
			c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionInterpreted)
			if got["webhook-a"] != workv1alpha1.ResourceHealthy || got["webhook-b"] != workv1alpha1.ResourceHealthy || c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("health %v, Interpreted %+v", got, c)
			}
			return nil
		}, report)
		slow.Store(false)
	})

	t.Run("configurations the hub could not call are refused", func(t *testing.T) {
		base := "apiVersion: config.flotilla.io/v1alpha1\nkind: InterpreterWebhookConfiguration\nmetadata: {name: refused}\nwebhooks:\n" +
			"- name: refused.example.io\n  interpreterContextVersions: [v1alpha1]\n" +
			"  rules: [{operations: [InterpretHealth], apiGroups: [example.io], apiVersions: ['*'], kinds: [Gadget]}]\n"
		for _, tc := range []struct{ name, doc, want string }{
			{"http url", base + "  clientConfig: {url: 'http://127.0.0.1:8080/'}\n", "is not https"},
			{"no url or service", base + "  clientConfig: {}\n", "a url or a service"},
			{"timeout past 30 seconds", base + "  clientConfig: {url: 'https://127.0.0.1:8443/'}\n  timeoutSeconds: 31\n", "timeoutSeconds"},
		} {
			if err := createDryRun(parseObject(t, tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: want it refused saying %q, got %v", tc.name, tc.want, err)
			}
		}
	})
}
