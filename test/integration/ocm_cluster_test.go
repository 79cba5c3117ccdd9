package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmclusterv1beta1 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta1"
	ocmclusterv1beta2 "github.com/flotilla-io/flotilla/api/ocm/cluster/v1beta2"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// ocmPlacementYAML is an OCM user's set, binding and Placement, unchanged: the Placement tolerates OCM's
// unreachable and unavailable taints (the test clusters have no agent, so the hub taints them).
const ocmPlacementYAML = `apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSet
metadata:
  name: ocm-prod
spec:
  clusterSelector:
    selectorType: ExclusiveClusterSetLabel
---
apiVersion: cluster.open-cluster-management.io/v1beta2
kind: ManagedClusterSetBinding
metadata:
  name: ocm-prod
  namespace: ocm-team
spec:
  clusterSet: ocm-prod
---
apiVersion: cluster.open-cluster-management.io/v1beta1
kind: Placement
metadata:
  name: web
  namespace: ocm-team
spec:
  clusterSets: [ocm-prod]
  tolerations:
  - key: cluster.open-cluster-management.io/unreachable
    operator: Exists
  - key: cluster.open-cluster-management.io/unavailable
    operator: Exists
    effect: NoSelect
  decisionStrategy:
    groupStrategy:
      clustersPerDecisionGroup: 1`

// TestOCMClusterAPIsServed: OCM's ManagedClusterSet, ManagedClusterSetBinding and Placement, applied unchanged,
// get their Flotilla twins; binding through OCM's group needs OCM's bind permission; the Placement decides
// with OCM's tolerations and its decisions appear as OCM PlacementDecisions, read the way Argo CD reads them;
// the twins' status shows in OCM's shape; a decision changed by hand is put back; deleting the Placement
// removes its twin and its decisions.
func TestOCMClusterAPIsServed(t *testing.T) {
	ctx := context.Background()
	const ns, user = "ocm-team", "ocm-team-editor"
	createNamespace(t, ns)
	placeableCluster(t, "ocm-a", map[string]string{clusterv1alpha1.LabelClusterSet: "ocm-prod"})
	placeableCluster(t, "ocm-b", map[string]string{clusterv1alpha1.LabelClusterSet: "ocm-prod"})
	docs := strings.Split(ocmPlacementYAML, "\n---\n")
	set, binding, placement := parseObject(t, docs[0]), parseObject(t, docs[1]), parseObject(t, docs[2])

	if err := env.Client.Create(ctx, set); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), set) })
	twinSet := &clusterv1alpha1.ClusterSet{}
	testenv.Eventually(t, 30*time.Second, "the ClusterSet twin holds both clusters", func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "ocm-prod"}, twinSet); err != nil {
			return err
		}
		if twinSet.Status.ClusterCount != 2 {
			return fmt.Errorf("status %+v", twinSet.Status)
		}
		return nil
	})
	if !metav1.IsControlledBy(twinSet, set) || twinSet.Spec.ClusterSelector.SelectorType != clusterv1alpha1.ExclusiveClusterSetLabel {
		t.Errorf("the ClusterSet twin: owners %v, spec %+v", twinSet.OwnerReferences, twinSet.Spec)
	}
	testenv.Eventually(t, 30*time.Second, "the ManagedClusterSet's status", func() error {
		got := &ocmclusterv1beta2.ManagedClusterSet{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "ocm-prod"}, got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, clusterv1alpha1.ClusterSetConditionEmpty); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("conditions %+v", got.Status.Conditions)
		}
		return nil
	})

	// A namespace editor with RBAC on OCM's kinds may not bind the set until given OCM's bind permission.
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ocm-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{ocmclusterv1beta2.GroupVersion.Group}, Resources: []string{"*"}, Verbs: []string{"*"}}}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ocm-editor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "ocm-editor"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	editor, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the editor refused by the bind rule", func() error {
		err := editor.Create(ctx, binding.DeepCopy(), client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), ocmclusterv1beta2.ResourceManagedClusterSetsBind) {
			return fmt.Errorf("got %v", err)
		}
		return nil
	})
	create(t, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ocm-prod-binder"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{ocmclusterv1beta2.GroupVersion.Group}, Resources: []string{ocmclusterv1beta2.ResourceManagedClusterSetsBind},
		ResourceNames: []string{"ocm-prod"}, Verbs: []string{"create"}}}})
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ocm-prod-binder"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "ocm-prod-binder"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	testenv.Eventually(t, time.Minute, "the editor binds ocm-prod", func() error { return editor.Create(ctx, binding) })
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), binding) })
	testenv.Eventually(t, 30*time.Second, "the ManagedClusterSetBinding is Bound", func() error {
		got := &ocmclusterv1beta2.ManagedClusterSetBinding{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ocm-prod"}, got); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("conditions %+v", got.Status.Conditions)
		}
		return nil
	})

	// A Placement that its controller could not evaluate is refused when written, as Flotilla's is.
	bad := placement.DeepCopy()
	bad.SetName("bad")
	if err := unstructured.SetNestedSlice(bad.Object, []any{map[string]any{"requiredClusterSelector": map[string]any{
		"celSelector": map[string]any{"celExpressions": []any{"cluster.metadata.name +"}}}}}, "spec", "predicates"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, bad, client.DryRunAll); !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		t.Errorf("a Placement with a CEL expression that does not compile: %v, want refused", err)
	}
	bad = placement.DeepCopy()
	bad.SetName("bad")
	if err := unstructured.SetNestedSlice(bad.Object, []any{map[string]any{"key": "k", "effect": "NoSchedule"}}, "spec", "tolerations"); err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Create(ctx, bad, client.DryRunAll); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "NoSelect") {
		t.Errorf("a Placement tolerating a taint effect OCM does not have: %v, want refused naming OCM's effects", err)
	}

	if err := env.Client.Create(ctx, placement); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), placement) })
	twin := &clusterv1alpha1.Placement{}
	testenv.Eventually(t, 30*time.Second, "the Placement twin", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, twin)
	})
	wantTolerations := []string{clusterv1alpha1.TaintClusterUnreachable + "/", clusterv1alpha1.TaintClusterNotReady + "/"}
	var gotTolerations []string
	for _, tol := range twin.Spec.Tolerations {
		gotTolerations = append(gotTolerations, tol.Key+"/"+string(tol.Effect))
	}
	if !metav1.IsControlledBy(twin, placement) || !slices.Equal(gotTolerations, wantTolerations) {
		t.Errorf("the Placement twin: owners %v, tolerations %v, want %v", twin.OwnerReferences, gotTolerations, wantTolerations)
	}

	// The decisions, read as Argo CD's generator reads them: OCM's resource, by OCM's placement label.
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "cluster.open-cluster-management.io", Version: "v1beta1", Resource: "placementdecisions"}
	decided := func() ([]string, []unstructured.Unstructured, error) {
		list, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{LabelSelector: "cluster.open-cluster-management.io/placement=web"})
		if err != nil {
			return nil, nil, err
		}
		var names []string
		for _, item := range list.Items {
			decisions, _, _ := unstructured.NestedSlice(item.Object, "status", "decisions")
			for _, d := range decisions {
				name, _, _ := unstructured.NestedString(d.(map[string]any), "clusterName")
				names = append(names, name)
			}
		}
		slices.Sort(names)
		return names, list.Items, nil
	}
	var items []unstructured.Unstructured
	testenv.Eventually(t, time.Minute, "OCM PlacementDecisions of web", func() error {
		names, got, err := decided()
		if err != nil {
			return err
		}
		if !slices.Equal(names, []string{"ocm-a", "ocm-b"}) || len(got) != 2 {
			return fmt.Errorf("clusters %v in %d objects%s", names, len(got), placementState(ns, "web"))
		}
		items = got
		return nil
	})
	for _, item := range items {
		labels := item.GetLabels()
		if !metav1.IsControlledBy(&item, placement) || labels[ocmclusterv1beta1.LabelDecisionGroupIndex] == "" {
			t.Errorf("OCM PlacementDecision %s: owners %v, labels %v", item.GetName(), item.GetOwnerReferences(), labels)
		}
	}
	testenv.Eventually(t, 30*time.Second, "the OCM Placement's status", func() error {
		got := &ocmclusterv1beta1.Placement{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, got); err != nil {
			return err
		}
		sat := meta.FindStatusCondition(got.Status.Conditions, clusterv1alpha1.PlacementConditionSatisfied)
		if got.Status.NumberOfSelectedClusters != 2 || sat == nil || sat.Status != metav1.ConditionTrue ||
			len(got.Status.DecisionGroups) != 2 || got.Status.DecisionGroups[1].ClustersCount != 1 {
			return fmt.Errorf("status %+v", got.Status)
		}
		return nil
	})

	// A decision changed by hand is put back.
	first := &ocmclusterv1beta1.PlacementDecision{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: items[0].GetName()}, first); err != nil {
		t.Fatal(err)
	}
	want := first.Status.DeepCopy()
	first.Status.Decisions = []clusterv1alpha1.ClusterDecision{{ClusterName: "elsewhere"}}
	if err := env.Client.Status().Update(ctx, first); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the edited decision put back", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(first), first); err != nil {
			return err
		}
		if !slices.Equal(first.Status.Decisions, want.Decisions) {
			return fmt.Errorf("decisions %+v", first.Status.Decisions)
		}
		return nil
	})

	// Deleting the OCM Placement removes its twin and its decisions.
	if err := env.Client.Delete(ctx, placement, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the twin and the decisions gone", func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, &clusterv1alpha1.Placement{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("twin: %v", err)
		}
		if names, _, err := decided(); err != nil || len(names) != 0 {
			return fmt.Errorf("OCM decisions %v %v", names, err)
		}
		return nil
	})
}
