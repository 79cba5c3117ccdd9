package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/addon"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// addOnManifests are a ConfigMap that shows the variables and a Deployment whose image registries rewrite.
var addOnManifests = []string{
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"cluster":"{{CLUSTER_NAME}}","level":"{{LOG_LEVEL}}","ns":"{{INSTALL_NAMESPACE}}"}}`,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"agent","image":"quay.io/obs/agent:1"}]}}}}`,
}

func newAddOn(name string, manifests ...string) *addonv1alpha1.AddOn {
	a := &addonv1alpha1.AddOn{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for _, m := range manifests {
		a.Spec.Template.Manifests = append(a.Spec.Template.Manifests, workv1alpha1.Manifest{RawExtension: runtime.RawExtension{Raw: []byte(m)}})
	}
	return a
}

func addOnConfig(namespace, name, level string) *addonv1alpha1.AddOnConfig {
	return &addonv1alpha1.AddOnConfig{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Spec: addonv1alpha1.AddOnConfigSpec{
		CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "LOG_LEVEL", Value: level}},
		Registries:          []addonv1alpha1.ImageMirror{{Source: "quay.io/", Mirror: "mirror.local/"}},
	}}
}

func configRef(namespace, name string) addonv1alpha1.ConfigReference {
	return addonv1alpha1.ConfigReference{Group: addonv1alpha1.GroupVersion.Group, Resource: addon.ConfigResource,
		ConfigName: addonv1alpha1.ConfigName{Namespace: namespace, Name: name}}
}

func withDefaultConfig(a *addonv1alpha1.AddOn, namespace, name string) {
	a.Spec.SupportedConfigs = []addonv1alpha1.ConfigMeta{{Group: addonv1alpha1.GroupVersion.Group, Resource: addon.ConfigResource,
		DefaultConfig: &addonv1alpha1.ConfigName{Namespace: namespace, Name: name}}}
}

// addOnPlacement is a Placement of the clusters labelled addon=<value>, tolerating the agentless clusters'
// taints.
func addOnPlacement(namespace, name, value string) *clusterv1alpha1.Placement {
	p := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	p.Spec.Predicates = []clusterv1alpha1.ClusterPredicate{{RequiredClusterSelector: clusterv1alpha1.ClusterSelector{
		LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{"addon": value}}}}}
	p.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	return p
}

func clusterAddOn(cluster, addonName string) *addonv1alpha1.ClusterAddOn {
	return &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: addonName,
		Labels: map[string]string{addonv1alpha1.LabelAddOn: addonName}}}
}

// addOnWork reads the add-on's Work on a cluster: the ConfigMap's data and the Deployment's image, when the
// template has them.
type renderedWork struct {
	work      *workv1alpha1.Work
	kinds     []string
	data      map[string]string
	image     string
	namespace string
}

func readAddOnWork(cluster, addonName string) (*renderedWork, error) {
	w := &workv1alpha1.Work{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: addonv1alpha1.WorkName(addonName)}, w); err != nil {
		return nil, err
	}
	out := &renderedWork{work: w}
	for _, m := range w.Spec.Workload.Manifests {
		var obj struct {
			Kind     string            `json:"kind"`
			Metadata metav1.ObjectMeta `json:"metadata"`
			Data     map[string]string `json:"data"`
			Spec     struct {
				Template struct {
					Spec corev1.PodSpec `json:"spec"`
				} `json:"template"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(m.Raw, &obj); err != nil {
			return nil, err
		}
		out.kinds = append(out.kinds, obj.Kind)
		switch obj.Kind {
		case "ConfigMap":
			out.data, out.namespace = obj.Data, obj.Metadata.Namespace
		case "Deployment":
			out.image = obj.Spec.Template.Spec.Containers[0].Image
		}
	}
	return out, nil
}

// waitAddOnWork waits until the add-on's Work on a cluster satisfies ok.
func waitAddOnWork(t *testing.T, cluster, addonName, what string, ok func(*renderedWork) error) *renderedWork {
	t.Helper()
	var got *renderedWork
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%s's Work of add-on %s: %s", cluster, addonName, what), func() (err error) {
		if got, err = readAddOnWork(cluster, addonName); err != nil {
			return err
		}
		return ok(got)
	})
	return got
}

func level(want string) func(*renderedWork) error {
	return func(r *renderedWork) error {
		if r.data["level"] != want {
			return fmt.Errorf("level=%s", r.data["level"])
		}
		return nil
	}
}

// reportAddOnWork writes an add-on Work's status as its agent would: every manifest applied, with health.
func reportAddOnWork(t *testing.T, cluster, addonName string, health workv1alpha1.ResourceHealth) {
	t.Helper()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &workv1alpha1.Work{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: addonv1alpha1.WorkName(addonName)}, w); err != nil {
			return err
		}
		now := metav1.Now()
		w.Status = workv1alpha1.WorkStatus{Conditions: []metav1.Condition{{Type: workv1alpha1.WorkConditionApplied, Status: metav1.ConditionTrue,
			Reason: "Applied", ObservedGeneration: w.Generation, LastTransitionTime: now}}}
		for i := range w.Spec.Workload.Manifests {
			w.Status.ManifestStatuses = append(w.Status.ManifestStatuses, workv1alpha1.ManifestStatus{
				Identifier: workv1alpha1.ResourceIdentifier{Ordinal: i, Version: "v1", Kind: "Object", Name: fmt.Sprint(i)}, Applied: true, Health: health})
		}
		return env.Client.Status().Update(context.Background(), w)
	}); err != nil {
		t.Fatal(err)
	}
}

// releaseAddOnWork removes a deleted add-on Work's execution finalizer, as its agent would once the member
// objects are gone.
func releaseAddOnWork(t *testing.T, cluster, addonName string) {
	t.Helper()
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%s's Work of add-on %s deleted and released", cluster, addonName), func() error {
		w := &workv1alpha1.Work{}
		err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: addonv1alpha1.WorkName(addonName)}, w)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if w.DeletionTimestamp == nil {
			return fmt.Errorf("not deleted")
		}
		patch := client.MergeFrom(w.DeepCopy())
		controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution)
		if err := env.Client.Patch(context.Background(), w, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
		return fmt.Errorf("released, not gone yet")
	})
}

func getClusterAddOn(cluster, addonName string) (*addonv1alpha1.ClusterAddOn, error) {
	c := &addonv1alpha1.ClusterAddOn{}
	return c, env.Client.Get(context.Background(), client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: addonName}, c)
}

// waitClusterAddOnCondition waits until a ClusterAddOn's condition has status and its message contains msg.
func waitClusterAddOnCondition(t *testing.T, cluster, addonName, condition string, status metav1.ConditionStatus, msg string) *addonv1alpha1.ClusterAddOn {
	t.Helper()
	var c *addonv1alpha1.ClusterAddOn
	testenv.Eventually(t, hangGuard, fmt.Sprintf("%s of add-on %s on %s %s (%q)", condition, addonName, cluster, status, msg), func() (err error) {
		if c, err = getClusterAddOn(cluster, addonName); err != nil {
			return err
		}
		got := meta.FindStatusCondition(c.Status.Conditions, condition)
		if got == nil || got.Status != status || !strings.Contains(got.Message, msg) {
			return fmt.Errorf("status %+v", c.Status)
		}
		return nil
	})
	return c
}

// addOnFleet makes an exclusive set bound to namespace and clusters in it, labelled addon=<value>.
func addOnFleet(t *testing.T, namespace, set string, clusters map[string]string) {
	t.Helper()
	createNamespace(t, namespace)
	exclusiveSet(t, set)
	create(t, setBinding(namespace, set))
	for name, value := range clusters {
		placeableCluster(t, name, map[string]string{clusterv1alpha1.LabelClusterSet: set, "addon": value})
	}
}

// TestAddOnEnabledByPlacement: an add-on installed by a Placement gets a ClusterAddOn (labelled as the
// strategy's) and a Work on the placed clusters only, nothing while its Placement does not exist yet; the Work
// holds the install Namespace first, the variables filled, the default config's registries applied; a
// ClusterAddOn's own config wins over the default and is reported with its spec hash; a cluster leaving the
// placement loses the strategy's ClusterAddOn and its Work, and keeps one created by hand; deleting the AddOn
// disables it on every cluster.
func TestAddOnEnabledByPlacement(t *testing.T) {
	ctx := context.Background()
	const ns, name = "ao-place", "ao-place"
	a, b, c, d := "ao-place-a", "ao-place-b", "ao-place-c", "ao-place-d"
	addOnFleet(t, ns, "ao-place-set", map[string]string{a: "yes", b: "yes", c: "yes", d: "no"})
	create(t, addOnConfig(ns, "base", "info"))
	create(t, addOnConfig(ns, "loud", "debug"))
	ao := newAddOn(name, addOnManifests...)
	withDefaultConfig(ao, ns, "base")
	ao.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.InstallPlacements,
		Placements: []addonv1alpha1.PlacementStrategy{{Namespace: ns, Name: "obs"}}}
	create(t, ao)
	// By hand, before the Placement exists: with the Placement missing the strategy touches nothing.
	manual := clusterAddOn(c, name)
	manual.Spec.Configs = []addonv1alpha1.ConfigReference{configRef(ns, "loud")}
	create(t, manual)
	waitAddOnWork(t, c, name, "level=debug from its own config", level("debug"))
	testenv.Eventually(t, hangGuard, "the AddOn saying its Placement does not exist", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ao), ao); err != nil {
			return err
		}
		if p := meta.FindStatusCondition(ao.Status.Conditions, addonv1alpha1.ConditionProgressing); p == nil || !strings.Contains(p.Message, "does not exist") {
			return fmt.Errorf("status %+v", ao.Status)
		}
		return nil
	})
	create(t, addOnPlacement(ns, "obs", "yes"))

	for _, cluster := range []string{a, b} {
		got := waitAddOnWork(t, cluster, name, "level=info", level("info"))
		if !slices.Equal(got.kinds, []string{"Namespace", "ConfigMap", "Deployment"}) || got.data["cluster"] != cluster ||
			got.data["ns"] != addonv1alpha1.DefaultInstallNamespace(name) || got.namespace != addonv1alpha1.DefaultInstallNamespace(name) ||
			got.image != "mirror.local/obs/agent:1" || got.work.Labels[addonv1alpha1.LabelAddOn] != name {
			t.Errorf("%s's Work: kinds %v, data %v in %s, image %s, labels %v", cluster, got.kinds, got.data, got.namespace, got.image, got.work.Labels)
		}
		ca, err := getClusterAddOn(cluster, name)
		if err != nil || ca.Labels[addonv1alpha1.LabelInstalledBy] != name {
			t.Errorf("%s's ClusterAddOn %v (%v), want the strategy's label", cluster, ca.Labels, err)
		}
	}
	cao := waitClusterAddOnCondition(t, c, name, addonv1alpha1.ConditionDegraded, metav1.ConditionFalse, "")
	loud := &addonv1alpha1.AddOnConfig{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "loud"}, loud); err != nil {
		t.Fatal(err)
	}
	if refs := cao.Status.ConfigReferences; len(refs) != 1 || refs[0].Name != "loud" || refs[0].SpecHash != addon.SpecHash(loud.Spec) ||
		cao.Status.Namespace != addonv1alpha1.DefaultInstallNamespace(name) || cao.Status.Revision == "" {
		t.Errorf("c's ClusterAddOn status %+v, want config loud with its hash, the namespace and a revision", cao.Status)
	}
	if cao.Labels[addonv1alpha1.LabelInstalledBy] != "" {
		t.Errorf("the hand-made ClusterAddOn was taken over: labels %v", cao.Labels)
	}
	if _, err := readAddOnWork(d, name); !apierrors.IsNotFound(err) {
		t.Errorf("unplaced cluster d has a Work of the add-on: %v", err)
	}
	if _, err := getClusterAddOn(d, name); !apierrors.IsNotFound(err) {
		t.Errorf("unplaced cluster d has a ClusterAddOn: %v", err)
	}

	// b and c leave the placement (a stays): b's strategy-made ClusterAddOn and its Work go, c's stays.
	setClusterLabel(t, b, "addon", "no")
	setClusterLabel(t, c, "addon", "no")
	releaseAddOnWork(t, b, name)
	testenv.Eventually(t, hangGuard, "b's ClusterAddOn gone", func() error {
		if _, err := getClusterAddOn(b, name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("got %v", err)
		}
		return nil
	})
	for _, cluster := range []string{a, c} {
		if ca, err := getClusterAddOn(cluster, name); err != nil || ca.DeletionTimestamp != nil {
			t.Errorf("%s's ClusterAddOn deleted (%v)", cluster, err)
		}
		if w, err := readAddOnWork(cluster, name); err != nil || w.work.DeletionTimestamp != nil {
			t.Errorf("%s's Work deleted (%v)", cluster, err)
		}
	}

	// Deleting the AddOn disables it everywhere, on the cluster enabled by hand too.
	if err := env.Client.Delete(ctx, ao); err != nil {
		t.Fatal(err)
	}
	for _, cluster := range []string{a, c} {
		releaseAddOnWork(t, cluster, name)
		testenv.EventuallyGone(t, env.Client, clusterAddOn(cluster, name), time.Minute)
	}
}

// TestAddOnDegradedOnBadInput: a template variable nobody fills and a config that does not exist make the
// ClusterAddOn Degraded with a message that says so, and the cluster's Work is left as it was.
func TestAddOnDegradedOnBadInput(t *testing.T) {
	ctx := context.Background()
	const ns, name, cluster = "ao-bad", "ao-bad", "ao-bad-a"
	createNamespace(t, ns)
	placeableCluster(t, cluster, nil)
	create(t, addOnConfig(ns, "base", "info"))
	ao := newAddOn(name, addOnManifests...)
	withDefaultConfig(ao, ns, "base")
	create(t, ao)
	create(t, clusterAddOn(cluster, name))
	before := waitAddOnWork(t, cluster, name, "level=info", level("info"))

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ao), ao); err != nil {
			return err
		}
		ao.Spec.Template.Manifests[0].Raw = []byte(strings.Replace(addOnManifests[0], "{{LOG_LEVEL}}", "{{LOG_LEVLE}}", 1))
		return env.Client.Update(ctx, ao)
	}); err != nil {
		t.Fatal(err)
	}
	waitClusterAddOnCondition(t, cluster, name, addonv1alpha1.ConditionDegraded, metav1.ConditionTrue, "{{LOG_LEVLE}}, which no variable fills")
	after, err := readAddOnWork(cluster, name)
	if err != nil || after.work.ResourceVersion != before.work.ResourceVersion {
		t.Errorf("the Work changed under a template that does not render (%v)", err)
	}

	// The template fixed, the default config deleted: Degraded for the missing config, the Work unchanged.
	if err := env.Client.Delete(ctx, &addonv1alpha1.AddOnConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "base"}}); err != nil {
		t.Fatal(err)
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ao), ao); err != nil {
			return err
		}
		ao.Spec.Template.Manifests[0].Raw = []byte(addOnManifests[0])
		return env.Client.Update(ctx, ao)
	}); err != nil {
		t.Fatal(err)
	}
	waitClusterAddOnCondition(t, cluster, name, addonv1alpha1.ConditionDegraded, metav1.ConditionTrue, "AddOnConfig ao-bad/base, named by the AddOn's default, does not exist")
	if after, err := readAddOnWork(cluster, name); err != nil || after.work.ResourceVersion != before.work.ResourceVersion {
		t.Errorf("the Work changed while its config is missing (%v)", err)
	}
}

// TestAddOnRegistrationAndDisable: an add-on with registration and health by Lease gets, per cluster, a
// RoleBinding of its agent's user for each hub permission (in the cluster's namespace, in the named one) and
// one on its Lease, status.registrations and RegistrationApplied; Available follows the Lease's renewals.
// Deleting the ClusterAddOn deletes the RBAC and the Work, and the ClusterAddOn goes once the Work is gone.
func TestAddOnRegistrationAndDisable(t *testing.T) {
	ctx := context.Background()
	const ns, name, cluster = "ao-reg", "ao-reg", "ao-reg-a"
	createNamespace(t, ns)
	placeableCluster(t, cluster, nil)
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reader"}})
	ao := newAddOn(name, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
	ao.Spec.Registration = &addonv1alpha1.Registration{HubPermissions: []addonv1alpha1.HubPermission{
		{Type: addonv1alpha1.PermissionCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterPermission{ClusterRoleName: "view"}},
		{Type: addonv1alpha1.PermissionSingleNamespace, SingleNamespace: &addonv1alpha1.SingleNamespacePermission{Namespace: ns,
			RoleRef: addonv1alpha1.RoleRef{Kind: "Role", Name: "reader"}}},
	}}
	ao.Spec.HealthCheck = addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthLease, LeaseDuration: &metav1.Duration{Duration: 3 * time.Second}}
	create(t, ao)
	create(t, clusterAddOn(cluster, name))
	ca := waitClusterAddOnCondition(t, cluster, name, addonv1alpha1.ConditionRegistrationApplied, metav1.ConditionTrue, "")
	user := addonv1alpha1.AgentUser(name, cluster)
	if r := ca.Status.Registrations; len(r) != 1 || r[0].User != user || !slices.Equal(r[0].Groups, []string{addonv1alpha1.AgentGroup(name)}) ||
		r[0].SecretName != addonv1alpha1.CredentialSecretName(name) {
		t.Errorf("registrations %+v", r)
	}
	bindings := func() map[string]string {
		list := &rbacv1.RoleBindingList{}
		if err := env.Client.List(ctx, list, client.MatchingLabels{addonv1alpha1.LabelAddOn: name}); err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, b := range list.Items {
			if len(b.Subjects) == 1 && b.Subjects[0].Name == user {
				out[b.Namespace+"/"+b.RoleRef.Kind+"/"+b.RoleRef.Name] = b.Name
			}
		}
		return out
	}
	clusterNS := clusterv1alpha1.ClusterNamespace(cluster)
	got := bindings()
	for _, want := range []string{clusterNS + "/ClusterRole/view", ns + "/Role/reader", clusterNS + "/Role/flotilla:addon:" + name + ":lease"} {
		if _, ok := got[want]; !ok {
			t.Errorf("no RoleBinding %s among %v", want, got)
		}
	}
	waitClusterAddOnCondition(t, cluster, name, addonv1alpha1.ConditionAvailable, metav1.ConditionFalse, "has not renewed its Lease")
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: clusterNS, Name: addonv1alpha1.LeaseName(name)},
		Spec: coordinationv1.LeaseSpec{RenewTime: &metav1.MicroTime{Time: time.Now()}}}
	create(t, lease)
	waitClusterAddOnCondition(t, cluster, name, addonv1alpha1.ConditionAvailable, metav1.ConditionTrue, "renews its Lease")
	// Not renewed for longer than leaseDuration: not available, with no write of the Lease to say so.
	waitClusterAddOnCondition(t, cluster, name, addonv1alpha1.ConditionAvailable, metav1.ConditionFalse, "more than 3s ago")

	if err := env.Client.Delete(ctx, ca); err != nil {
		t.Fatal(err)
	}
	releaseAddOnWork(t, cluster, name)
	testenv.Eventually(t, hangGuard, "the ClusterAddOn gone with its RBAC", func() error {
		if _, err := getClusterAddOn(cluster, name); !apierrors.IsNotFound(err) {
			return fmt.Errorf("ClusterAddOn: %v", err)
		}
		if left := bindings(); len(left) > 0 {
			return fmt.Errorf("RoleBindings left: %v", left)
		}
		roles := &rbacv1.RoleList{}
		if err := env.Client.List(ctx, roles, client.MatchingLabels{addonv1alpha1.LabelAddOn: name}); err != nil || len(roles.Items) > 0 {
			return fmt.Errorf("Roles left: %d (%v)", len(roles.Items), err)
		}
		return nil
	})
}

// TestAddOnProgressiveRollout: a change of an add-on's default config reaches a placement's three clusters
// one at a time (maxConcurrency 1): the next cluster's Work changes only once the previous one reported it
// healthy; the clusters not reached keep their Work; the AddOn's status.rollouts says where it stands.
func TestAddOnProgressiveRollout(t *testing.T) {
	ctx := context.Background()
	const ns, name = "ao-roll", "ao-roll"
	clusters := []string{"ao-roll-a", "ao-roll-b", "ao-roll-c"}
	addOnFleet(t, ns, "ao-roll-set", map[string]string{clusters[0]: "yes", clusters[1]: "yes", clusters[2]: "yes"})
	base := addOnConfig(ns, "base", "info")
	create(t, base)
	ao := newAddOn(name, addOnManifests...)
	withDefaultConfig(ao, ns, "base")
	ao.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.InstallPlacements, Placements: []addonv1alpha1.PlacementStrategy{{
		Namespace: ns, Name: "obs", RolloutStrategy: &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive,
			Progressive: &policyv1alpha1.ProgressiveRollout{MaxConcurrency: ptr.To(intstr.FromInt32(1))}}}}}
	create(t, ao)
	create(t, addOnPlacement(ns, "obs", "yes"))
	for _, c := range clusters {
		waitAddOnWork(t, c, name, "level=info", level("info"))
		reportAddOnWork(t, c, name, workv1alpha1.ResourceHealthy)
	}
	rolled := func(what string, done func(r workv1alpha1.RolloutStatus) bool) workv1alpha1.RolloutStatus {
		var st workv1alpha1.RolloutStatus
		testenv.Eventually(t, hangGuard, what, func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ao), ao); err != nil {
				return err
			}
			r := ao.Status.Rollouts
			if len(r) != 1 || r[0].Name != "obs" || len(r[0].Rollout.Clusters) != 3 || !done(r[0].Rollout) || ao.Status.EnabledClusters != 3 {
				return fmt.Errorf("status %+v", ao.Status)
			}
			st = r[0].Rollout
			return nil
		})
		return st
	}
	complete := func(r workv1alpha1.RolloutStatus) bool {
		return r.StableHash == r.TargetHash && !slices.ContainsFunc(r.Clusters, func(c workv1alpha1.ClusterRollout) bool {
			return c.State != workv1alpha1.RolloutSucceeded
		})
	}
	first := rolled("the first rollout complete", complete)

	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(base), base); err != nil {
			return err
		}
		base.Spec.CustomizedVariables[0].Value = "debug"
		return env.Client.Update(ctx, base)
	}); err != nil {
		t.Fatal(err)
	}
	// Clusters are updated in name order (one group): each only once the one before reported healthy.
	for i, c := range clusters {
		waitAddOnWork(t, c, name, "level=debug", level("debug"))
		for _, later := range clusters[i+1:] {
			if w, err := readAddOnWork(later, name); err != nil || w.data["level"] != "info" {
				t.Fatalf("%s updated before %s was healthy (%v)", later, c, err)
			}
		}
		time.Sleep(500 * time.Millisecond) // what a wrongly started wave would write: nothing may
		for _, later := range clusters[i+1:] {
			if w, err := readAddOnWork(later, name); err != nil || w.data["level"] != "info" {
				t.Fatalf("%s updated before %s was healthy (%v)", later, c, err)
			}
		}
		reportAddOnWork(t, c, name, workv1alpha1.ResourceHealthy)
	}
	rolled("the change rolled out in 3 waves", func(r workv1alpha1.RolloutStatus) bool {
		return complete(r) && r.TargetRevision == first.TargetRevision+1 && r.Wave == 3
	})

	// At rest: a reconcile of every add-on (any AddOnConfig change brings one) writes nothing.
	versions := func() []string {
		out := []string{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(ao), ao); err != nil {
			t.Fatal(err)
		}
		out = append(out, ao.ResourceVersion)
		for _, c := range clusters {
			ca, err := getClusterAddOn(c, name)
			w, err2 := readAddOnWork(c, name)
			if err != nil || err2 != nil {
				t.Fatal(err, err2)
			}
			out = append(out, ca.ResourceVersion, w.work.ResourceVersion)
		}
		return out
	}
	before := versions()
	since := reconciles(t, "addon")
	create(t, addOnConfig(ns, "unrelated", "x"))
	waitReconciled(t, "addon", since, 1)
	if after := versions(); !slices.Equal(before, after) {
		t.Errorf("a reconcile at rest wrote the AddOn, a ClusterAddOn or a Work: resourceVersions %v, then %v", before, after)
	}
}

// TestAddOnClusterDeletedDoesNotHang: a cluster deleted with an add-on enabled goes, and its ClusterAddOn with
// it: the add-on's finalizer leaves the Work to deregistration (which keeps or deletes member objects as the
// unjoin says) rather than wait for an agent that is leaving.
func TestAddOnClusterDeletedDoesNotHang(t *testing.T) {
	const name, cluster = "ao-gone", "ao-gone-a"
	c := createPullCluster(t, cluster)
	ao := newAddOn(name, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
	create(t, ao)
	create(t, clusterAddOn(cluster, name))
	waitAddOnWork(t, cluster, name, "written", func(*renderedWork) error { return nil })
	if err := env.Client.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: name}}, time.Minute)
	testenv.EventuallyGone(t, env.Client, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clusterv1alpha1.ClusterNamespace(cluster)}}, time.Minute)
}
