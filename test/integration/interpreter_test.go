package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

const interpreterGroup = "interpreter.example.io"

// widgetsCustomization makes a Widget (spec.replicas, status.readyReplicas) a workload Flotilla divides,
// judges and sums.
func widgetsCustomization(health string) *configv1alpha1.InterpreterCustomization {
	return &configv1alpha1.InterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "widgets"},
		Spec: configv1alpha1.InterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: interpreterGroup + "/v1", Kind: "Widget"},
			Customizations: configv1alpha1.CustomizationRules{
				ReplicaResource:      &configv1alpha1.Expression{CEL: `{"replicas": object.spec.replicas, "requests": {"cpu": "500m"}}`},
				StatusReflection:     &configv1alpha1.Expression{CEL: `{"readyReplicas": object.?status.?readyReplicas.orValue(0)}`},
				HealthInterpretation: &configv1alpha1.Expression{CEL: health},
				StatusAggregation: &configv1alpha1.Expression{CEL: `{"readyReplicas": statuses.map(s, s.status.readyReplicas).sum(),
					"clusters": size(statuses)}`},
			},
		},
	}
}

// hubSays waits until kstatus, reading the hub's template, says want with a message containing message.
// Each try first runs keep, if given: a test playing the agents re-reports the Works the hub rewrote.
func hubSays(t *testing.T, template *unstructured.Unstructured, want status.Status, message string, keep ...func()) {
	t.Helper()
	testenv.Eventually(t, hangGuard, "kstatus says "+string(want)+" of the hub's "+template.GetName(), func() error {
		for _, k := range keep {
			k()
		}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(template), template); err != nil {
			return err
		}
		res, err := status.Compute(template)
		if err != nil {
			return err
		}
		if res.Status != want || !strings.Contains(res.Message, message) {
			return fmt.Errorf("kstatus %s (%s) for the status %v", res.Status, res.Message, template.Object["status"])
		}
		return nil
	})
}

// TestInterpreterCustomization: an InterpreterCustomization makes a CRD's objects divided over clusters like
// a Deployment, judged healthy and summed on the hub by its expressions (with the hub's conditions and
// observedGeneration, which kstatus reads); a bad expression is refused at admission, and one that fails at
// run time marks the binding with the Interpreted condition.
func TestInterpreterCustomization(t *testing.T) {
	ctx := context.Background()
	const namespace = "interpreter"
	crd := widgetCRD(interpreterGroup, "Widget")
	for i := range crd.Spec.Versions {
		crd.Spec.Versions[i].Subresources = &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}}
		// The status keeps any field and types observedGeneration as an integer: the hub writes its own.
		crd.Spec.Versions[i].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type: "object", XPreserveUnknownFields: ptrTo(true), Properties: map[string]apiextensionsv1.JSONSchemaProps{
				"status": {Type: "object", XPreserveUnknownFields: ptrTo(true), Properties: map[string]apiextensionsv1.JSONSchemaProps{
					"observedGeneration": {Type: "integer", Format: "int64"}}}}}}
	}
	createCRD(t, crd)
	createNamespace(t, namespace)
	for _, name := range []string{"interpreter-a", "interpreter-b"} {
		placeableCluster(t, name, map[string]string{"interpreter": "yes"})
		updateClusterStatus(t, name, func(s *clusterv1alpha1.ClusterStatus) {
			for _, v := range []string{"v1", "v2"} {
				s.APIEnablements = append(s.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: interpreterGroup + "/" + v,
					Resources: []clusterv1alpha1.APIResource{{Name: "widgets", Kind: "Widget"}}})
			}
		})
	}
	create(t, widgetsCustomization(`object.?status.?readyReplicas.orValue(0) >= object.spec.replicas`))
	weight := func(cluster string, w int64) policyv1alpha1.StaticClusterWeight {
		return policyv1alpha1.StaticClusterWeight{TargetCluster: policyv1alpha1.ClusterAffinity{ClusterNames: []string{cluster}}, Weight: w}
	}
	create(t, &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "widgets"},
		Spec: policyv1alpha1.PropagationSpec{
			ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: interpreterGroup + "/v1", Kind: "Widget"}},
			Placement: policyv1alpha1.Placement{
				ClusterAffinity:    &policyv1alpha1.ClusterAffinity{LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"interpreter": "yes"}}},
				ClusterTolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				ReplicaScheduling: &policyv1alpha1.ReplicaSchedulingStrategy{
					ReplicaSchedulingType:     policyv1alpha1.ReplicaSchedulingDivided,
					ReplicaDivisionPreference: policyv1alpha1.ReplicaDivisionWeighted,
					WeightPreference: &policyv1alpha1.ClusterPreferences{StaticWeightList: []policyv1alpha1.StaticClusterWeight{
						weight("interpreter-a", 1), weight("interpreter-b", 2)}},
				},
			},
		}})
	widget := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"replicas": int64(6)}}}
	widget.SetAPIVersion(interpreterGroup + "/v1")
	widget.SetKind("Widget")
	widget.SetNamespace(namespace)
	widget.SetName("w")
	create(t, widget)

	gk := schema.GroupKind{Group: interpreterGroup, Kind: "Widget"}
	var b *workv1alpha1.ResourceBinding
	testenv.Eventually(t, hangGuard, "the Widget divided 2/4 over the clusters", func() error {
		var err error
		if b, err = binding(ctx, gk, namespace, "w"); err != nil {
			return err
		}
		if b.Spec.Replicas != 6 || b.Spec.ReplicaRequirements == nil || b.Spec.ReplicaRequirements.ResourceRequest.Cpu().String() != "500m" {
			return fmt.Errorf("replicas %d, requirements %+v", b.Spec.Replicas, b.Spec.ReplicaRequirements)
		}
		got := map[string]int32{}
		for _, c := range b.Spec.Clusters {
			got[c.Name] = c.Replicas
		}
		if got["interpreter-a"] != 2 || got["interpreter-b"] != 4 || len(got) != 2 {
			return fmt.Errorf("clusters %v, conditions %+v", b.Spec.Clusters, b.Status.Conditions)
		}
		return nil
	})
	works := map[string]*workv1alpha1.Work{}
	for cluster, share := range map[string]int{"interpreter-a": 2, "interpreter-b": 4} {
		w := &workv1alpha1.Work{}
		testenv.Eventually(t, hangGuard, cluster+"'s Work carries its share", func() error {
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: workv1alpha1.WorkName(b.Namespace, b.Name)}, w); err != nil {
				return err
			}
			if len(w.Spec.Workload.Manifests) == 0 || !strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), fmt.Sprintf(`"replicas":%d`, share)) {
				return fmt.Errorf("manifest %s", w.Spec.Workload.Manifests)
			}
			return nil
		})
		works[cluster] = w
	}

	// The agent's built-in rule calls any Widget healthy; the customization judges by readyReplicas. The test
	// plays the agents: reported keeps what each last reported, so that rereport can report it again for a Work
	// the hub rewrote since (a real agent reports every generation it applies; the hub counts a cluster caught
	// up only when its report speaks of the Work's current generation).
	reported := map[string]int{}
	var report func(cluster string, ready int)
	rereport := func() {
		for cluster, ready := range reported {
			w := works[cluster]
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
				t.Fatal(err)
			}
			if c := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied); c == nil || c.ObservedGeneration != w.Generation {
				report(cluster, ready)
			}
		}
	}
	report = func(cluster string, ready int) {
		t.Helper()
		reported[cluster] = ready
		w := works[cluster]
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			t.Fatal(err)
		}
		now := metav1.Now()
		w.Status = workv1alpha1.WorkStatus{
			Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied",
				ObservedGeneration: w.Generation, LastTransitionTime: now}},
			ManifestStatuses: []workv1alpha1.ManifestStatus{{
				Identifier: workv1alpha1.ResourceIdentifier{Group: interpreterGroup, Version: "v1", Kind: "Widget", Namespace: namespace, Name: "w"},
				Applied:    true, Health: workv1alpha1.ResourceHealthy,
				Status: &runtime.RawExtension{Raw: fmt.Appendf(nil, `{"readyReplicas":%d,"noise":"left out by statusReflection"}`, ready)},
				Conditions: []metav1.Condition{
					{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue, Reason: "Applied", LastTransitionTime: now},
					{Type: workv1alpha1.ManifestConditionObserved, Status: metav1.ConditionTrue, Reason: "Observed", LastTransitionTime: now},
				},
			}},
		}
		if err := env.Client.Status().Update(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	bindingSays := func(t *testing.T, what string, check func(b *workv1alpha1.ResourceBinding) error) {
		t.Helper()
		testenv.Eventually(t, hangGuard, what, func() error {
			var err error
			if b, err = binding(ctx, gk, namespace, "w"); err != nil {
				return err
			}
			return check(b)
		})
	}
	healthOf := func(b *workv1alpha1.ResourceBinding) map[string]string {
		out := map[string]string{}
		for _, item := range b.Status.AggregatedStatus {
			out[item.ClusterName] = string(item.Health)
			if item.Status != nil {
				out[item.ClusterName] += " " + string(item.Status.Raw)
			}
		}
		return out
	}

	t.Run("health and status come from the customization", func(t *testing.T) {
		report("interpreter-a", 2)
		report("interpreter-b", 1)
		bindingSays(t, "b unhealthy by readyReplicas, statuses reflected", func(b *workv1alpha1.ResourceBinding) error {
			got := healthOf(b)
			if got["interpreter-a"] != `Healthy {"readyReplicas":2}` || got["interpreter-b"] != `Unhealthy {"readyReplicas":1}` {
				return fmt.Errorf("aggregated %v", got)
			}
			if c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionHealthy); c == nil || c.Status != metav1.ConditionFalse {
				return fmt.Errorf("Healthy %+v", c)
			}
			if c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionInterpreted); c == nil || c.Status != metav1.ConditionTrue {
				return fmt.Errorf("Interpreted %+v", c)
			}
			return nil
		})
		// The customization's aggregation alone says nothing kstatus reads: it would call the Widget Current.
		hubSays(t, widget, status.InProgressStatus, "not healthy yet in interpreter-b", rereport)
		report("interpreter-b", 4)
		bindingSays(t, "healthy everywhere", func(b *workv1alpha1.ResourceBinding) error {
			if !meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionHealthy) {
				return fmt.Errorf("conditions %+v, aggregated %v", b.Status.Conditions, healthOf(b))
			}
			return nil
		})
		testenv.Eventually(t, hangGuard, "the Widget's status summed on the hub", func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(widget), widget); err != nil {
				return err
			}
			ready, _, _ := unstructured.NestedInt64(widget.Object, "status", "readyReplicas")
			clusters, _, _ := unstructured.NestedInt64(widget.Object, "status", "clusters")
			if ready != 6 || clusters != 2 {
				return fmt.Errorf("status %v", widget.Object["status"])
			}
			return nil
		})
		hubSays(t, widget, status.CurrentStatus, "", rereport)
		if og, _, _ := unstructured.NestedInt64(widget.Object, "status", "observedGeneration"); og != widget.GetGeneration() {
			t.Errorf("observedGeneration %d, want the template's %d", og, widget.GetGeneration())
		}
	})

	t.Run("a changed customization reaches the template's binding", func(t *testing.T) {
		ic := &configv1alpha1.InterpreterCustomization{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "widgets"}, ic); err != nil {
			t.Fatal(err)
		}
		ic.Spec.Customizations.ReplicaResource.CEL = `{"replicas": object.spec.replicas / 2}`
		if err := env.Client.Update(ctx, ic); err != nil {
			t.Fatal(err)
		}
		bindingSays(t, "3 replicas divided 1/2, without requirements", func(b *workv1alpha1.ResourceBinding) error {
			got := map[string]int32{}
			for _, c := range b.Spec.Clusters {
				got[c.Name] = c.Replicas
			}
			if b.Spec.Replicas != 3 || b.Spec.ReplicaRequirements != nil || got["interpreter-a"] != 1 || got["interpreter-b"] != 2 {
				return fmt.Errorf("replicas %d, requirements %+v, clusters %v", b.Spec.Replicas, b.Spec.ReplicaRequirements, got)
			}
			return nil
		})
	})

	t.Run("a bad expression is refused at admission", func(t *testing.T) {
		bad := widgetsCustomization(`object.status.readyReplicas >=`)
		bad.Name = "widgets-bad"
		err := env.Client.Create(ctx, bad)
		if err == nil {
			_ = env.Client.Delete(ctx, bad)
			t.Fatal("a customization with an expression that does not parse was accepted")
		}
		for _, want := range []string{"spec.customizations.healthInterpretation.cel", "<input>:1:"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
		wrongType := widgetsCustomization(`size(object.spec)`)
		wrongType.Name = "widgets-int"
		if err := env.Client.Create(ctx, wrongType); err == nil || !strings.Contains(err.Error(), "healthInterpretation must return bool") {
			_ = env.Client.Delete(ctx, wrongType)
			t.Errorf("a health expression returning a number: error %v", err)
		}
	})

	t.Run("a run-time error marks the binding", func(t *testing.T) {
		ic := &configv1alpha1.InterpreterCustomization{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "widgets"}, ic); err != nil {
			t.Fatal(err)
		}
		ic.Spec.Customizations.HealthInterpretation.CEL = `object.status.missing > 0`
		if err := env.Client.Update(ctx, ic); err != nil {
			t.Fatal(err)
		}
		bindingSays(t, "Interpreted=False naming the customization", func(b *workv1alpha1.ResourceBinding) error {
			c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionInterpreted)
			if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "InterpreterCustomization widgets: healthInterpretation") ||
				!strings.Contains(c.Message, "missing") {
				return fmt.Errorf("Interpreted %+v", c)
			}
			return nil
		})
		// What does not depend on the broken operation goes on: the division stays.
		if len(b.Spec.Clusters) != 2 || b.Spec.Replicas != 3 {
			t.Errorf("binding spec changed: %d replicas over %v", b.Spec.Replicas, b.Spec.Clusters)
		}
	})

	t.Run("operations in Karmada's Lua format drive the binding", func(t *testing.T) {
		ic := &configv1alpha1.InterpreterCustomization{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "widgets"}, ic); err != nil {
			t.Fatal(err)
		}
		ic.Spec.Customizations.ReplicaResource = &configv1alpha1.Expression{LuaScript: `
function GetReplicas(desiredObj)
  return desiredObj.spec.replicas, {resourceRequest = {cpu = "250m"}}
end`}
		ic.Spec.Customizations.HealthInterpretation = &configv1alpha1.Expression{LuaScript: `
function InterpretHealth(observedObj)
  return (observedObj.status and observedObj.status.readyReplicas or 0) >= 1
end`}
		if err := env.Client.Update(ctx, ic); err != nil {
			t.Fatal(err)
		}
		bindingSays(t, "6 replicas of 250m divided 2/4", func(b *workv1alpha1.ResourceBinding) error {
			got := map[string]int32{}
			for _, c := range b.Spec.Clusters {
				got[c.Name] = c.Replicas
			}
			if b.Spec.Replicas != 6 || b.Spec.ReplicaRequirements == nil || b.Spec.ReplicaRequirements.ResourceRequest.Cpu().String() != "250m" ||
				got["interpreter-a"] != 2 || got["interpreter-b"] != 4 {
				return fmt.Errorf("replicas %d, requirements %+v, clusters %v", b.Spec.Replicas, b.Spec.ReplicaRequirements, got)
			}
			return nil
		})
		for cluster, share := range map[string]int{"interpreter-a": 2, "interpreter-b": 4} {
			w := works[cluster]
			testenv.Eventually(t, hangGuard, cluster+"'s Work carries its share again", func() error {
				if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
					return err
				}
				if !strings.Contains(string(w.Spec.Workload.Manifests[0].Raw), fmt.Sprintf(`"replicas":%d`, share)) {
					return fmt.Errorf("manifest %s", w.Spec.Workload.Manifests)
				}
				return nil
			})
			// One ready replica: healthy by the Lua rule (at least one), not by the CEL one it replaced (all).
			report(cluster, 1)
		}
		bindingSays(t, "healthy by the Lua rule and interpreted again", func(b *workv1alpha1.ResourceBinding) error {
			got := healthOf(b)
			if got["interpreter-a"] != `Healthy {"readyReplicas":1}` || got["interpreter-b"] != `Healthy {"readyReplicas":1}` ||
				!meta.IsStatusConditionTrue(b.Status.Conditions, workv1alpha1.ConditionInterpreted) {
				return fmt.Errorf("aggregated %v, conditions %+v", got, b.Status.Conditions)
			}
			return nil
		})
	})

	t.Run("a backtracking pattern stops at the time limit", func(t *testing.T) {
		// string.match takes hours on this in one call, which no time limit interrupted in gopher-lua. At its
		// top level, the script is refused at admission (TestInvalidObjectsRejected); in a function, the
		// binding says which operation of which customization failed.
		const backtracking = `string.match("x"..(" "):rep(200000).."y", "^%s*(.-)%s*$")`
		const stopped = "string.match: the pattern was still matching at the evaluation's time limit"
		ic := &configv1alpha1.InterpreterCustomization{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "widgets"}, ic); err != nil {
			t.Fatal(err)
		}
		working := ic.Spec.Customizations.ReplicaResource.DeepCopy()
		ic.Spec.Customizations.ReplicaResource = &configv1alpha1.Expression{LuaScript: `
function GetReplicas(desiredObj)
  local trimmed = ` + backtracking + `
  return desiredObj.spec.replicas, {}
end`}
		if err := env.Client.Update(ctx, ic); err != nil {
			t.Fatal(err)
		}
		bindingSays(t, "Interpreted=False naming the operation and the pattern", func(b *workv1alpha1.ResourceBinding) error {
			c := meta.FindStatusCondition(b.Status.Conditions, workv1alpha1.ConditionInterpreted)
			if c == nil || c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "InterpreterCustomization widgets: replicaResource") ||
				!strings.Contains(c.Message, stopped) {
				return fmt.Errorf("Interpreted %+v", c)
			}
			return nil
		})
		// Put the working operation back: every evaluation of the broken one spends the whole time limit.
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "widgets"}, ic); err != nil {
			t.Fatal(err)
		}
		ic.Spec.Customizations.ReplicaResource = working
		if err := env.Client.Update(ctx, ic); err != nil {
			t.Fatal(err)
		}
	})
}
