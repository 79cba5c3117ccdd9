package integration

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/clusterset"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// exclusiveSet creates an ExclusiveClusterSetLabel set, deleted at the end of the test.
func exclusiveSet(t *testing.T, name string) {
	t.Helper()
	set := &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: name}}
	set.Spec.ClusterSelector.SelectorType = clusterv1alpha1.ExclusiveClusterSetLabel
	create(t, set)
}

// setClusterLabel sets (value non-empty) or removes a label of a Cluster.
func setClusterLabel(t *testing.T, name, key, value string) {
	t.Helper()
	v := "null"
	if value != "" {
		v = fmt.Sprintf("%q", value)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, key, v)
	if err := env.Client.Patch(context.Background(), &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}},
		client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// waitSetCount waits until a set's status counts want clusters, with ClusterSetEmpty saying so, and returns it.
func waitSetCount(t *testing.T, name string, want int32) *clusterv1alpha1.ClusterSet {
	t.Helper()
	set := &clusterv1alpha1.ClusterSet{}
	testenv.Eventually(t, time.Minute, fmt.Sprintf("ClusterSet %s counting %d clusters", name, want), func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: name}, set); err != nil {
			return err
		}
		empty := meta.FindStatusCondition(set.Status.Conditions, clusterv1alpha1.ClusterSetConditionEmpty)
		if set.Status.ClusterCount != want || empty == nil || (empty.Status == metav1.ConditionTrue) != (want == 0) {
			return fmt.Errorf("status %+v", set.Status)
		}
		return nil
	})
	return set
}

// waitGranted waits until a binding's status says Bound (reason) and grants exactly clusters, and returns it.
func waitGranted(t *testing.T, namespace, name, reason string, clusters ...string) *clusterv1alpha1.ClusterSetBinding {
	t.Helper()
	b := &clusterv1alpha1.ClusterSetBinding{}
	testenv.Eventually(t, time.Minute, fmt.Sprintf("binding %s/%s %s granting %v", namespace, name, reason, clusters), func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: namespace, Name: name}, b); err != nil {
			return err
		}
		bound := meta.FindStatusCondition(b.Status.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound)
		if bound == nil || bound.Reason != reason || !slices.Equal(b.Status.Clusters, clusters) || int(b.Status.ClusterCount) != len(clusters) {
			return fmt.Errorf("status %+v", b.Status)
		}
		return nil
	})
	return b
}

func setBinding(namespace, set string) *clusterv1alpha1.ClusterSetBinding {
	return &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: set},
		Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: set}}
}

// TestBuiltinClusterSets: the hub keeps default (the clusters without the exclusive label) and global (every
// cluster); one deleted comes back, and neither's selector may change.
func TestBuiltinClusterSets(t *testing.T) {
	ctx := context.Background()
	for _, name := range clusterset.Builtins {
		set := &clusterv1alpha1.ClusterSet{}
		testenv.Eventually(t, time.Minute, "built-in ClusterSet "+name, func() error { return env.Client.Get(ctx, client.ObjectKey{Name: name}, set) })
		want := clusterset.Builtin(name).Spec.ClusterSelector
		if got := set.Spec.ClusterSelector; got.SelectorType != want.SelectorType || (got.LabelSelector == nil) != (want.LabelSelector == nil) {
			t.Errorf("ClusterSet %s selects %+v, want %+v", name, got, want)
		}
		if err := env.Client.Delete(ctx, set); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "built-in ClusterSet "+name+" recreated", func() error {
			again := &clusterv1alpha1.ClusterSet{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, again); err != nil {
				return err
			}
			if again.UID == set.UID {
				return fmt.Errorf("still the deleted one")
			}
			return nil
		})
	}
	patch := `{"spec":{"clusterSelector":{"selectorType":"LabelSelector","labelSelector":{"matchLabels":{"tier":"gold"}}}}}`
	err := env.Client.Patch(ctx, &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterSetGlobal}},
		client.RawPatch(types.MergePatchType, []byte(patch)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "the built-in ClusterSet global holds every cluster") {
		t.Fatalf("changing global's selector: %v, want Invalid", err)
	}
}

// TestClusterSetStatus: a set counts its clusters and says when it is empty, follows relabelled clusters,
// and is not rewritten when nothing it counts changed (a cluster's heartbeat).
func TestClusterSetStatus(t *testing.T) {
	exclusiveSet(t, "cs-status-prod")
	exclusiveSet(t, "cs-status-empty")
	gold := &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "cs-status-gold"}, Spec: clusterv1alpha1.ClusterSetSpec{
		ClusterSelector: clusterv1alpha1.ClusterSetSelector{SelectorType: clusterv1alpha1.LabelSelector,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"cs-status-tier": "gold"}}}}}
	create(t, gold)
	placeableCluster(t, "cs-status-m1", map[string]string{clusterv1alpha1.LabelClusterSet: "cs-status-prod", "cs-status-tier": "gold"})
	placeableCluster(t, "cs-status-m2", map[string]string{clusterv1alpha1.LabelClusterSet: "cs-status-prod"})
	placeableCluster(t, "cs-status-m3", nil)

	prod := waitSetCount(t, "cs-status-prod", 2)
	waitSetCount(t, "cs-status-gold", 1)
	empty := waitSetCount(t, "cs-status-empty", 0)
	if c := meta.FindStatusCondition(empty.Status.Conditions, clusterv1alpha1.ClusterSetConditionEmpty); c.Reason != clusterset.ReasonNoClusters ||
		!strings.Contains(c.Message, "no cluster is labelled cluster.flotilla.io/clusterset=cs-status-empty") {
		t.Errorf("empty set's condition %+v", c)
	}

	// A heartbeat of a member, then a relabel the controller must see: once the gold set counts two, the
	// prod set, looked at for the same relabel, must not have been rewritten.
	updateClusterStatus(t, "cs-status-m1", func(s *clusterv1alpha1.ClusterStatus) { s.AgentVersion = "heartbeat" })
	setClusterLabel(t, "cs-status-m3", "cs-status-tier", "gold")
	waitSetCount(t, "cs-status-gold", 2)
	again := waitSetCount(t, "cs-status-prod", 2)
	if again.ResourceVersion != prod.ResourceVersion {
		t.Errorf("ClusterSet cs-status-prod rewritten with nothing changed: resourceVersion %s then %s", prod.ResourceVersion, again.ResourceVersion)
	}

	setClusterLabel(t, "cs-status-m2", clusterv1alpha1.LabelClusterSet, "cs-status-empty")
	waitSetCount(t, "cs-status-prod", 1)
	waitSetCount(t, "cs-status-empty", 1)
}

// TestClusterSetBindingStatus: a binding says whether its set exists and lists the clusters it grants,
// following the set's creation and its clusters' labels.
func TestClusterSetBindingStatus(t *testing.T) {
	const ns = "cs-binding-team"
	createNamespace(t, ns)
	exclusiveSet(t, "cs-binding-prod")
	placeableCluster(t, "cs-binding-m1", map[string]string{clusterv1alpha1.LabelClusterSet: "cs-binding-prod"})
	placeableCluster(t, "cs-binding-m2", map[string]string{clusterv1alpha1.LabelClusterSet: "cs-binding-prod"})

	create(t, setBinding(ns, "cs-binding-prod"))
	b := waitGranted(t, ns, "cs-binding-prod", clusterset.ReasonClusterSetBound, "cs-binding-m1", "cs-binding-m2")
	if c := meta.FindStatusCondition(b.Status.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound); c.Status != metav1.ConditionTrue {
		t.Errorf("Bound %+v", c)
	}
	setClusterLabel(t, "cs-binding-m2", clusterv1alpha1.LabelClusterSet, "")
	waitGranted(t, ns, "cs-binding-prod", clusterset.ReasonClusterSetBound, "cs-binding-m1")

	create(t, setBinding(ns, "cs-binding-later"))
	missing := waitGranted(t, ns, "cs-binding-later", clusterset.ReasonClusterSetNotFound)
	if c := meta.FindStatusCondition(missing.Status.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound); c.Status != metav1.ConditionFalse ||
		c.Message != "ClusterSet cs-binding-later does not exist: the binding grants no cluster" {
		t.Errorf("Bound of a binding to a missing set: %+v", c)
	}
	exclusiveSet(t, "cs-binding-later")
	setClusterLabel(t, "cs-binding-m2", clusterv1alpha1.LabelClusterSet, "cs-binding-later")
	waitGranted(t, ns, "cs-binding-later", clusterset.ReasonClusterSetBound, "cs-binding-m2")

	patch := `{"spec":{"clusterSet":"cs-binding-prod"}}`
	err := env.Client.Patch(context.Background(), setBinding(ns, "cs-binding-later"), client.RawPatch(types.MergePatchType, []byte(patch)))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusterSet is immutable") {
		t.Errorf("changing spec.clusterSet: %v, want Invalid", err)
	}
}

// TestBindingAClusterSetNeedsBind: a user who may write ClusterSetBindings in a namespace (its editor) may
// not bind a set without create on clustersets/bind for it; granted that for one set, the user binds it and
// still not another.
func TestBindingAClusterSetNeedsBind(t *testing.T) {
	ctx := context.Background()
	const ns, user = "cs-bind-team", "cs-bind-editor"
	createNamespace(t, ns)
	exclusiveSet(t, "cs-bind-prod")
	exclusiveSet(t, "cs-bind-pci")
	editor := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{clusterv1alpha1.GroupVersion.Group, "policy.flotilla.io"}, Resources: []string{"*"}, Verbs: []string{"*"}}}}
	create(t, editor)
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "editor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "editor"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	// The editor's rights reach the API server's RBAC cache first: a dry run of a binding is refused by the
	// admission policy, not by RBAC.
	testenv.Eventually(t, time.Minute, "the editor refused by the bind rule", func() error {
		err := c.Create(ctx, setBinding(ns, "cs-bind-prod"), client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "binding ClusterSet cs-bind-prod to a namespace needs create on clustersets/bind") {
			return fmt.Errorf("got %v", err)
		}
		return nil
	})

	binder := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "cs-bind-prod-binder"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, Resources: []string{clusterv1alpha1.ResourceClusterSetsBind},
		ResourceNames: []string{"cs-bind-prod"}, Verbs: []string{"create"}}}}
	create(t, binder)
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "cs-bind-prod-binder"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: binder.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	testenv.Eventually(t, time.Minute, "the editor binds cs-bind-prod", func() error { return c.Create(ctx, setBinding(ns, "cs-bind-prod")) })
	if err := c.Create(ctx, setBinding(ns, "cs-bind-pci")); !apierrors.IsForbidden(err) {
		t.Fatalf("the editor bound cs-bind-pci: %v, want Forbidden", err)
	}
	if err := env.Client.Create(ctx, setBinding(ns, "cs-bind-pci"), client.DryRunAll); err != nil {
		t.Fatalf("the administrator may not bind cs-bind-pci: %v", err)
	}
	// Unbinding needs only RBAC.
	if err := c.Delete(ctx, setBinding(ns, "cs-bind-prod")); err != nil {
		t.Fatalf("the editor may not unbind: %v", err)
	}
}

// TestClusterSetCommands: flotilla clusterset create, add, remove, bind, get and unbind, and describe
// cluster naming the cluster's sets.
func TestClusterSetCommands(t *testing.T) {
	ctx := context.Background()
	const ns = "cs-cli-team"
	createNamespace(t, ns)
	placeableCluster(t, "cs-cli-m1", nil)
	placeableCluster(t, "cs-cli-m2", map[string]string{"cs-cli-tier": "gold"})
	run := func(args ...string) string {
		t.Helper()
		out, err := runFlotilla(ctx, args...)
		if err != nil {
			t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	run("clusterset", "create", "cs-cli-prod")
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "cs-cli-prod"}})
	})
	run("clusterset", "create", "cs-cli-gold", "--selector", "cs-cli-tier=gold")
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "cs-cli-gold"}})
	})
	if out := run("clusterset", "add", "cs-cli-prod", "cs-cli-m1", "cs-cli-m2"); !strings.Contains(out, "cluster cs-cli-m2 is now in ClusterSet cs-cli-prod") {
		t.Errorf("add said:\n%s", out)
	}
	if out, err := runFlotilla(ctx, "clusterset", "add", "cs-cli-gold", "cs-cli-m1"); err == nil || !strings.Contains(err.Error(), "picks its clusters by a label selector (cs-cli-tier=gold)") {
		t.Errorf("add to a selector set: %v\n%s", err, out)
	}
	waitSetCount(t, "cs-cli-prod", 2)
	waitSetCount(t, "cs-cli-gold", 1)
	if out := run("describe", "cluster", "cs-cli-m2"); !strings.Contains(out, "cs-cli-gold, cs-cli-prod, global") {
		t.Errorf("describe cluster does not list the cluster's sets:\n%s", out)
	}
	run("clusterset", "remove", "cs-cli-prod", "cs-cli-m2")
	waitSetCount(t, "cs-cli-prod", 1)
	if out := run("clusterset", "get", "cs-cli-prod", "cs-cli-gold", "-o", "wide"); !strings.Contains(out, "cs-cli-prod") || !strings.Contains(out, "cs-cli-tier=gold") {
		t.Errorf("clusterset get:\n%s", out)
	}

	run("clusterset", "bind", "cs-cli-prod", "-n", ns)
	waitGranted(t, ns, "cs-cli-prod", clusterset.ReasonClusterSetBound, "cs-cli-m1")
	out := run("clusterset", "get", "-n", ns, "-o", "wide")
	if !strings.Contains(out, "GRANTED") || !strings.Contains(out, "cs-cli-m1") || !strings.Contains(out, "True") {
		t.Errorf("clusterset get -n:\n%s", out)
	}
	if out := run("clusterset", "get", "-n", ns, "-o", "yaml"); !strings.Contains(out, "kind: ClusterSetBinding") {
		t.Errorf("clusterset get -n -o yaml:\n%s", out)
	}
	run("clusterset", "unbind", "cs-cli-prod", "-n", ns)
	if out := run("clusterset", "get", "-n", ns); !strings.Contains(out, "No ClusterSet is bound to namespace "+ns) {
		t.Errorf("clusterset get -n after unbind:\n%s", out)
	}
}

// TestTenancyExample: examples/tenancy.yaml applies as the administrator, and its bindings find their sets.
func TestTenancyExample(t *testing.T) {
	data, err := os.ReadFile("../../examples/tenancy.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(data), "\n---\n") {
		create(t, parseObject(t, doc))
	}
	for ns, set := range map[string]string{"team-a": "prod", "team-b": "dev"} {
		testenv.Eventually(t, time.Minute, fmt.Sprintf("binding %s/%s Bound", ns, set), func() error {
			b := &clusterv1alpha1.ClusterSetBinding{}
			if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: set}, b); err != nil {
				return err
			}
			if !meta.IsStatusConditionTrue(b.Status.Conditions, clusterv1alpha1.ClusterSetBindingConditionBound) {
				return fmt.Errorf("status %+v", b.Status)
			}
			return nil
		})
	}
}

// TestPolicyNamingAnUngrantedClusterWarns: a PropagationPolicy in a bound namespace naming a cluster outside
// its sets is accepted with a warning naming the cluster; in a namespace without a binding, none.
func TestPolicyNamingAnUngrantedClusterWarns(t *testing.T) {
	const ns, other = "cs-warn-team", "cs-warn-unbound"
	createNamespace(t, ns)
	createNamespace(t, other)
	exclusiveSet(t, "cs-warn-prod")
	placeableCluster(t, "cs-warn-m1", map[string]string{clusterv1alpha1.LabelClusterSet: "cs-warn-prod"})
	placeableCluster(t, "cs-warn-m2", nil)
	create(t, setBinding(ns, "cs-warn-prod"))
	w := &warnings{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	policyIn := func(namespace string) client.Object {
		return tolerantPolicy(namespace, "web", []string{"cs-warn-m1", "cs-warn-m2"})
	}
	if err := c.Create(context.Background(), policyIn(ns), client.DryRunAll); err != nil {
		t.Fatalf("refused: %v", err)
	}
	want := "cs-warn-m2 is in no ClusterSet bound to namespace cs-warn-team: the namespace's workloads are not placed there"
	if got := strings.Join(w.text, "\n"); got != want {
		t.Fatalf("warnings %q, want %q", got, want)
	}
	w.text = nil
	if err := c.Create(context.Background(), policyIn(other), client.DryRunAll); err != nil || len(w.text) > 0 {
		t.Fatalf("policy in a namespace without a binding on an open hub: %v, warnings %q", err, w.text)
	}
	env.SetClusterSetMode(t, clusterset.RequireBindings)
	if err := c.Create(context.Background(), policyIn(other), client.DryRunAll); err != nil {
		t.Fatalf("refused: %v", err)
	}
	want = "cs-warn-m1 is in no ClusterSet bound to namespace cs-warn-unbound: the namespace's workloads are not placed there\n" +
		"cs-warn-m2 is in no ClusterSet bound to namespace cs-warn-unbound: the namespace's workloads are not placed there"
	if got := strings.Join(w.text, "\n"); got != want {
		t.Fatalf("policy in a namespace without a binding on a hub that requires them: warnings %q, want %q", got, want)
	}
}
