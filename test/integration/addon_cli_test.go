package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// manualAddOn is an AddOn enabled by hand that installs one ConfigMap, deleted at the end of the test.
func manualAddOn(t *testing.T, name string) *addonv1alpha1.AddOn {
	t.Helper()
	a := &addonv1alpha1.AddOn{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: addonv1alpha1.AddOnSpec{
		Description:     "a ConfigMap per cluster",
		InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.InstallManual},
		Template: addonv1alpha1.AddOnTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"data":{"cluster":"{{CLUSTER_NAME}}"}}`)}}}}}}
	create(t, a)
	return a
}

// enabledOn lists the clusters whose namespace holds a ClusterAddOn named addon that is not being deleted.
func enabledOn(t *testing.T, addon string) []string {
	t.Helper()
	list := &addonv1alpha1.ClusterAddOnList{}
	if err := env.Client.List(context.Background(), list, client.MatchingFields{"metadata.name": addon}); err != nil {
		t.Fatal(err)
	}
	var clusters []string
	for _, ca := range list.Items {
		if cluster, ok := clusterv1alpha1.ClusterOfNamespace(ca.Namespace); ok && ca.DeletionTimestamp == nil {
			clusters = append(clusters, cluster)
		}
	}
	sort.Strings(clusters)
	return clusters
}

// releaseDisabledWorks waits until the ClusterAddOns of addon on clusters are gone, removing the execution
// finalizer of their deleted Works as each cluster's agent would once the member objects are gone.
func releaseDisabledWorks(t *testing.T, addon string, clusters ...string) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, hangGuard, fmt.Sprintf("AddOn %s disabled on %v", addon, clusters), func() error {
		for _, cluster := range clusters {
			ns := clusterv1alpha1.ClusterNamespace(cluster)
			w := &workv1alpha1.Work{}
			err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: addonv1alpha1.WorkName(addon)}, w)
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
			if err == nil && w.DeletionTimestamp != nil && controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution) {
				if err := env.Client.Update(ctx, w); client.IgnoreNotFound(err) != nil {
					return err
				}
			}
			if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: addon}, &addonv1alpha1.ClusterAddOn{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the ClusterAddOn on %s is still there (%v)", cluster, err)
			}
		}
		return nil
	})
}

// TestAddOnCommands: flotilla addon enable writes a ClusterAddOn per named cluster, labelled with the add-on
// and not as the install strategy's, after refusing (and writing nothing for) a missing add-on, a missing
// cluster and an add-on installed by placements; list and status print what the objects hold; disable
// deletes only the named clusters' ClusterAddOns, refuses one the strategy created, and --all-clusters the
// rest.
func TestAddOnCommands(t *testing.T) {
	ctx := context.Background()
	placeableCluster(t, "ao-cli-m1", nil)
	placeableCluster(t, "ao-cli-m2", nil)
	manualAddOn(t, "ao-cli-hello")
	// ao-cli-placed is installed by a Placement that decides on ao-cli-m1.
	createNamespace(t, "ao-cli-team")
	create(t, setBinding("ao-cli-team", clusterv1alpha1.ClusterSetGlobal))
	create(t, &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: "ao-cli-team", Name: "everywhere"},
		Spec: clusterv1alpha1.PlacementSpec{ClusterSets: []string{clusterv1alpha1.ClusterSetGlobal}, Predicates: []clusterv1alpha1.ClusterPredicate{{
			RequiredClusterSelector: clusterv1alpha1.ClusterSelector{CelSelector: clusterv1alpha1.CelSelector{CelExpressions: []string{`cluster.metadata.name == "ao-cli-m1"`}}}}}}})
	placed := &addonv1alpha1.AddOn{ObjectMeta: metav1.ObjectMeta{Name: "ao-cli-placed"}, Spec: addonv1alpha1.AddOnSpec{
		InstallStrategy: addonv1alpha1.InstallStrategy{Type: addonv1alpha1.InstallPlacements,
			Placements: []addonv1alpha1.PlacementStrategy{{Namespace: "ao-cli-team", Name: "everywhere"}}},
		Template: addonv1alpha1.AddOnTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}}}}}}
	create(t, placed)
	run := func(args ...string) string {
		t.Helper()
		out, err := runFlotilla(ctx, args...)
		if err != nil {
			t.Fatalf("flotilla %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return out
	}
	refused := func(want string, args ...string) {
		t.Helper()
		out, err := runFlotilla(ctx, args...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("flotilla %s: %v, want an error saying %q\n%s", strings.Join(args, " "), err, want, out)
		}
	}

	refused("AddOn ao-cli-nothing does not exist", "addon", "enable", "ao-cli-nothing", "--cluster", "ao-cli-m1")
	refused("cluster ao-cli-m9 does not exist", "addon", "enable", "ao-cli-hello", "--cluster", "ao-cli-m1", "--cluster", "ao-cli-m9")
	refused("AddOn ao-cli-placed is installed by its Placements (ao-cli-team/everywhere)", "addon", "enable", "ao-cli-placed", "--cluster", "ao-cli-m1")
	if got := enabledOn(t, "ao-cli-hello"); len(got) != 0 {
		t.Fatalf("a refused enable wrote ClusterAddOns on %v", got)
	}
	if out := run("addon", "enable", "ao-cli-hello", "--cluster", "ao-cli-m1", "--dry-run", "server"); !strings.Contains(out, "(server dry run)") {
		t.Errorf("enable --dry-run server said:\n%s", out)
	}
	if got := enabledOn(t, "ao-cli-hello"); len(got) != 0 {
		t.Fatalf("a dry run wrote ClusterAddOns on %v", got)
	}

	out := run("addon", "enable", "ao-cli-hello", "--cluster", "ao-cli-m1,ao-cli-m2")
	for _, cluster := range []string{"ao-cli-m1", "ao-cli-m2"} {
		want := fmt.Sprintf("clusteraddon.addon.flotilla.io/ao-cli-hello created in namespace %s: AddOn ao-cli-hello is enabled on cluster %s",
			clusterv1alpha1.ClusterNamespace(cluster), cluster)
		if !strings.Contains(out, want) {
			t.Errorf("enable does not say %q:\n%s", want, out)
		}
		ca := &addonv1alpha1.ClusterAddOn{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: "ao-cli-hello"}, ca); err != nil {
			t.Fatal(err)
		}
		if _, byStrategy := ca.Labels[addonv1alpha1.LabelInstalledBy]; ca.Labels[addonv1alpha1.LabelAddOn] != "ao-cli-hello" || byStrategy {
			t.Errorf("the ClusterAddOn on %s is labelled %v, want %s=ao-cli-hello and no %s", cluster, ca.Labels, addonv1alpha1.LabelAddOn, addonv1alpha1.LabelInstalledBy)
		}
	}
	if out := run("addon", "enable", "ao-cli-hello", "--cluster", "ao-cli-m1"); !strings.Contains(out, "AddOn ao-cli-hello is already enabled on cluster ao-cli-m1") {
		t.Errorf("enabling again said:\n%s", out)
	}

	if out := run("addon", "list", "-o", "wide"); !strings.Contains(out, "ao-cli-hello") || !strings.Contains(out, "Manual") ||
		!strings.Contains(out, "ao-cli-team/everywhere") || !strings.Contains(out, "STRATEGY") {
		t.Errorf("addon list -o wide:\n%s", out)
	}
	if out := run("addon", "list", "--cluster", "ao-cli-m2", "-o", "wide"); !strings.Contains(out, "ao-cli-m2") || !strings.Contains(out, "ao-cli-hello") ||
		!strings.Contains(out, "hand") || strings.Contains(out, "ao-cli-m1") {
		t.Errorf("addon list --cluster ao-cli-m2:\n%s", out)
	}

	// status prints what the ClusterAddOn holds: a status written here, or the hub's own where its add-on
	// controller runs; either way the table must say what the object says.
	ca := &addonv1alpha1.ClusterAddOn{}
	key := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace("ao-cli-m1"), Name: "ao-cli-hello"}
	if err := env.Client.Get(ctx, key, ca); err != nil {
		t.Fatal(err)
	}
	if len(ca.Status.Conditions) == 0 {
		ca.Status.Revision = "ao-cli-rev-1"
		ca.Status.Conditions = []metav1.Condition{
			{Type: addonv1alpha1.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "Unhealthy", Message: "ConfigMap not applied yet", LastTransitionTime: metav1.Now()},
			{Type: addonv1alpha1.ConditionRegistrationApplied, Status: metav1.ConditionTrue, Reason: "NoRegistration", LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Update(ctx, ca); err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
	}
	testenv.Eventually(t, time.Minute, "addon status printing the ClusterAddOn's status", func() error {
		if err := env.Client.Get(ctx, key, ca); err != nil {
			return err
		}
		out, err := runFlotilla(ctx, "addon", "status", "ao-cli-hello", "--cluster", "ao-cli-m1", "-o", "wide")
		if err != nil {
			return err
		}
		if !strings.Contains(out, "AddOn ao-cli-hello: strategy Manual") || !strings.Contains(out, "REGISTRATION") {
			return fmt.Errorf("no summary or header:\n%s", out)
		}
		var row string
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "ao-cli-m1 ") {
				row = line
			}
		}
		if row == "" || strings.Contains(out, "ao-cli-m2") {
			return fmt.Errorf("not one row for ao-cli-m1:\n%s", out)
		}
		fields := strings.Fields(row)
		for i, t := range []string{addonv1alpha1.ConditionAvailable, addonv1alpha1.ConditionProgressing, addonv1alpha1.ConditionDegraded,
			addonv1alpha1.ConditionRegistrationApplied} {
			want := "-"
			if c := meta.FindStatusCondition(ca.Status.Conditions, t); c != nil {
				want = string(c.Status)
			}
			if fields[1+i] != want {
				return fmt.Errorf("%s is %s, the row says %s:\n%s", t, want, fields[1+i], out)
			}
		}
		if rev := ca.Status.Revision; rev != "" && fields[5] != rev {
			return fmt.Errorf("revision %s, the row says %s:\n%s", rev, fields[5], out)
		}
		return nil
	})
	if out := run("addon", "status", "ao-cli-hello", "-o", "yaml"); strings.Count(out, "kind: ClusterAddOn") != 2 {
		t.Errorf("addon status -o yaml does not list both ClusterAddOns:\n%s", out)
	}
	if out := run("describe", "cluster", "ao-cli-m1"); !strings.Contains(out, "Add-ons:") || !strings.Contains(out, "ao-cli-hello") {
		t.Errorf("describe cluster does not list the cluster's add-ons:\n%s", out)
	}

	refused("--cluster or --all-clusters is required", "addon", "disable", "ao-cli-hello")
	refused("AddOn ao-cli-hello is not enabled on cluster ao-cli-m9; nothing was disabled", "addon", "disable", "ao-cli-hello", "--cluster", "ao-cli-m1", "--cluster", "ao-cli-m9")
	// A ClusterAddOn of the install strategy's is not disabled here: the strategy would create it again. The
	// hub's strategy creates it where it runs; this test does otherwise.
	byStrategy := &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace("ao-cli-m1"), Name: "ao-cli-placed",
		Labels: map[string]string{addonv1alpha1.LabelAddOn: "ao-cli-placed", addonv1alpha1.LabelInstalledBy: "ao-cli-placed"}}}
	if err := env.Client.Create(ctx, byStrategy); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), byStrategy) })
	refused("AddOn ao-cli-placed was enabled on ao-cli-m1 by its install strategy", "addon", "disable", "ao-cli-placed", "--cluster", "ao-cli-m1")
	if got := enabledOn(t, "ao-cli-hello"); strings.Join(got, ",") != "ao-cli-m1,ao-cli-m2" {
		t.Fatalf("refused disables left ao-cli-hello on %v", got)
	}

	// disable --wait follows the hub until the ClusterAddOn is gone; with no agent here, the test releases the
	// Work as the agent would once the member objects are gone.
	done := make(chan error, 1)
	go func() {
		var err error
		out, err = runFlotilla(ctx, "addon", "disable", "ao-cli-hello", "--cluster", "ao-cli-m1", "--wait", "1m")
		done <- err
	}()
	releaseDisabledWorks(t, "ao-cli-hello", "ao-cli-m1")
	if err := <-done; err != nil {
		t.Fatalf("disable --wait: %v\n%s", err, out)
	}
	if !strings.Contains(out, "deleted from namespace "+clusterv1alpha1.ClusterNamespace("ao-cli-m1")) ||
		!strings.Contains(out, "removes AddOn ao-cli-hello's objects from cluster ao-cli-m1") || !strings.Contains(out, "ao-cli-m1: removed") {
		t.Errorf("disable said:\n%s", out)
	}
	if got := enabledOn(t, "ao-cli-hello"); strings.Join(got, ",") != "ao-cli-m2" {
		t.Fatalf("after disabling on ao-cli-m1 the add-on is on %v, want ao-cli-m2 alone", got)
	}
	run("addon", "disable", "ao-cli-hello", "--all-clusters")
	if got := enabledOn(t, "ao-cli-hello"); len(got) != 0 {
		t.Fatalf("after --all-clusters the add-on is on %v", got)
	}
	releaseDisabledWorks(t, "ao-cli-hello", "ao-cli-m2")
	refused("AddOn ao-cli-hello is enabled on no cluster", "addon", "disable", "ao-cli-hello", "--all-clusters")
}

// TestAddOnExample: examples/addons/ applies as the administrator, and the CLI reads the add-on as the
// example says: installed by its Placement, so enable refuses it and says to change the Placement.
func TestAddOnExample(t *testing.T) {
	ctx := context.Background()
	files, err := filepath.Glob("../../examples/addons/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples/addons/*.yaml: %v", err)
	}
	sort.Strings(files)
	kinds := map[string]bool{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---\n") {
			obj := parseObject(t, doc)
			kinds[obj.GetKind()] = true
			create(t, obj)
		}
	}
	for _, k := range []string{"AddOn", "AddOnConfig", "ClusterRole", "Placement", "ClusterSetBinding", "Namespace"} {
		if !kinds[k] {
			t.Errorf("examples/addons has no %s", k)
		}
	}
	a := &addonv1alpha1.AddOn{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "hello"}, a); err != nil {
		t.Fatal(err)
	}
	if a.Spec.Registration == nil || len(a.Spec.SupportedConfigs) != 1 || a.Spec.SupportedConfigs[0].DefaultConfig == nil ||
		a.Spec.InstallStrategy.Placements[0].RolloutStrategy == nil {
		t.Fatalf("the example lost a part: %+v", a.Spec)
	}
	out, err := runFlotilla(ctx, "addon", "enable", "hello", "--cluster", "m1")
	if err == nil || !strings.Contains(err.Error(), "installed by its Placements (flotilla-addons/hello)") {
		t.Fatalf("enable of the example: %v\n%s", err, out)
	}
	if out, err := runFlotilla(ctx, "addon", "list", "hello", "-o", "wide"); err != nil || !strings.Contains(out, "Placements") || !strings.Contains(out, "flotilla-addons/hello") {
		t.Fatalf("addon list hello: %v\n%s", err, out)
	}
}
