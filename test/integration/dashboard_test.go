package integration

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/planecmd"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// startDashboard runs flotilla dashboard with kubeconfig on a free port until the test ends, opens the URL
// it printed in the browser of ctx (which takes this run's token as a cookie), and returns the dashboard's
// URL without the token.
func startDashboard(t *testing.T, ctx context.Context, kubeconfig string) string {
	t.Helper()
	run, cancel := context.WithCancel(context.Background())
	r, w := io.Pipe()
	root := planecmd.NewRoot()
	root.SetOut(w)
	root.SetErr(w)
	root.SetArgs([]string{"dashboard", "--kubeconfig", kubeconfig, "--port", "0"})
	done := make(chan error, 1)
	go func() { done <- root.ExecuteContext(run); _ = w.Close() }()
	t.Cleanup(func() {
		cancel()
		go func() { _, _ = io.Copy(io.Discard, r) }()
		if err := <-done; err != nil {
			t.Errorf("flotilla dashboard: %v", err)
		}
	})
	line, err := bufio.NewReader(r).ReadString('\n')
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "dashboard at ")
	if err != nil || !ok {
		t.Fatalf("flotilla dashboard printed %q: %v", line, err)
	}
	base, _, hasToken := strings.Cut(url, "?token=")
	if !hasToken {
		t.Fatalf("flotilla dashboard printed no token: %s", url)
	}
	// The token's URL redirects to the dashboard; the next navigation waits for that page.
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible("main")); err != nil {
		t.Fatal(err)
	}
	return base
}

// dashboardFleet: clusters dash-a (eu-west-1) and dash-b (us-east-1) serve Deployments, dash-c is tainted
// gpu:NoSchedule; a Deployment of 4 replicas in dash-team is divided over those the policy names, and a
// ConfigMap in dash-other is placed too.
func dashboardFleet(t *testing.T) {
	ctx := context.Background()
	for _, ns := range []string{"dash-team", "dash-other"} {
		createNamespace(t, ns)
	}
	for name, region := range map[string]string{"dash-a": "eu-west-1", "dash-b": "us-east-1", "dash-c": "us-east-1"} {
		placeableCluster(t, name, nil)
		c := &clusterv1alpha1.Cluster{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, c); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Region, c.Spec.Zones = region, []string{region + "a"}
		if name == "dash-c" {
			c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoSchedule})
		}
		if err := env.Client.Patch(ctx, c, patch); err != nil {
			t.Fatal(err)
		}
		updateClusterStatus(t, name, func(s *clusterv1alpha1.ClusterStatus) {
			s.APIEnablements = append(s.APIEnablements, clusterv1alpha1.APIEnablement{GroupVersion: "apps/v1",
				Resources: []clusterv1alpha1.APIResource{{Name: "deployments", Kind: "Deployment"}}})
		})
	}
	labels := map[string]string{"app": "web"}
	create(t, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "dash-team", Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(int32(4)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}})
	policy := tolerantPolicy("dash-team", "web", []string{"dash-a", "dash-b", "dash-c"})
	policy.Spec.ResourceSelectors = []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}}
	policy.Spec.Placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided}
	policy.Spec.Rollout = &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive} // the workload page shows its waves
	create(t, policy)
	create(t, configMap("dash-other", "plans", nil))
	create(t, tolerantPolicy("dash-other", "plans", []string{"dash-a"}))
	waitPlaced(t, "dash-other", "plans", "dash-a")
	waitDeployment(t, "dash-a=2,dash-b=2")
}

// waitDeployment waits until the binding of Deployment dash-team/web is placed as want says.
func waitDeployment(t *testing.T, want string) {
	t.Helper()
	testenv.Eventually(t, hangGuard, "dash-team/web placed "+want, func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "dash-team", Name: "web-deployment"}, b); err != nil {
			return err
		}
		var got []string
		for _, c := range b.Spec.Clusters {
			got = append(got, fmt.Sprintf("%s=%d", c.Name, c.Replicas))
		}
		if strings.Join(got, ",") != want || len(b.Status.NotPlacedOn) == 0 {
			return fmt.Errorf("placed %v, verdicts %v", got, b.Status.NotPlacedOn)
		}
		return nil
	})
}

// TestDashboard drives the dashboard in Chromium: the fleet's tiles, a workload's clusters, replicas and
// why it is not on a cluster, live updates of a taint and a scale without a reload, and a person limited
// to one namespace seeing only its workloads.
func TestDashboard(t *testing.T) {
	ctx := testenv.Browser(t)
	dashboardFleet(t)
	url := startDashboard(t, ctx, env.Kubeconfig)

	t.Run("nobody without the run's token is answered", func(t *testing.T) {
		resp, err := http.Get(url + "workloads")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || strings.Contains(string(body), "dash-team") {
			t.Fatalf("a request without the token: %d\n%s", resp.StatusCode, body)
		}
	})

	t.Run("fleet", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitText(ctx, `[data-cluster="dash-a"]`, "dash-a", 10*time.Second); err != nil {
			t.Fatalf("no tile for dash-a: %v", err)
		}
		tile := testenv.Text(t, ctx, `[data-cluster="dash-c"]`)
		for _, want := range []string{"Pull", "v1.37.1", "3/3", "gpu=yes:NoSchedule"} {
			if !strings.Contains(tile, want) {
				t.Fatalf("dash-c's tile lacks %q:\n%s", want, tile)
			}
		}
		if page := testenv.Text(t, ctx, "main"); !strings.Contains(page, "eu-west-1") || !strings.Contains(page, "us-east-1") {
			t.Fatalf("the fleet is not grouped by region:\n%s", page)
		}
	})

	t.Run("taint shows live", func(t *testing.T) {
		testenv.NoReload(t, ctx, true)
		c := &clusterv1alpha1.Cluster{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Name: "dash-a"}, c); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Taints = append(c.Spec.Taints, corev1.Taint{Key: "maintenance", Effect: corev1.TaintEffectPreferNoSchedule})
		if err := env.Client.Patch(context.Background(), c, patch); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitText(ctx, `[data-cluster="dash-a"]`, "maintenance:PreferNoSchedule", testenv.LiveWithin); err != nil {
			t.Fatalf("the taint did not show within %s: %v\n%s", testenv.LiveWithin, err, testenv.Text(t, ctx, `[data-cluster="dash-a"]`))
		}
		testenv.NoReload(t, ctx, false)
	})

	t.Run("workload", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"workloads")); err != nil {
			t.Fatal(err)
		}
		row := `[data-workload="dash-team/web"]`
		if err := testenv.WaitText(ctx, row, "dash-a: 2", 10*time.Second); err != nil {
			t.Fatalf("no row for dash-team/web with dash-a's replicas: %v", err)
		}
		if got := testenv.Text(t, ctx, row); !strings.Contains(got, "dash-b: 2") || strings.Contains(got, "dash-c") || !strings.Contains(got, "dash-team/web") {
			t.Fatalf("dash-team/web's placement: %s", got)
		}
		// The keyboard reaches the workload page: focus the row's link and press Enter.
		if err := chromedp.Do(ctx, chromedp.Focus(row+" a"), chromedp.KeyEvent("\r"), chromedp.WaitVisible("#why-not")); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitText(ctx, ".whynot", "TaintToleration: have the untolerated taint gpu:NoSchedule", 10*time.Second); err != nil {
			t.Fatalf("the workload page does not say why dash-c was left out: %v", err)
		}
		if got := testenv.Text(t, ctx, "main"); !strings.Contains(got, "dash-a: 2 replicas") || !strings.Contains(got, "dash-b: 2 replicas") {
			t.Fatalf("the workload page lacks the per-cluster replicas:\n%s", got)
		}
		// No agent reports health here: the first revision is in progress on both clusters.
		if err := testenv.WaitText(ctx, ".rollout", "dash-a", 10*time.Second); err != nil {
			t.Fatalf("the workload page shows no rollout: %v\n%s", err, testenv.Text(t, ctx, "main"))
		}
		if got := testenv.Text(t, ctx, ".rollout"); !strings.Contains(got, "Progressing") || !strings.Contains(got, "dash-b") {
			t.Fatalf("the rollout table: %s", got)
		}
	})

	t.Run("scale shows live", func(t *testing.T) {
		testenv.NoReload(t, ctx, true)
		d := &appsv1.Deployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: "dash-team", Name: "web"}, d); err != nil {
			t.Fatal(err)
		}
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To(int32(6))
		if err := env.Client.Patch(context.Background(), d, patch); err != nil {
			t.Fatal(err)
		}
		waitDeployment(t, "dash-a=3,dash-b=3")
		if err := testenv.WaitText(ctx, "main", "dash-a: 3 replicas", testenv.LiveWithin); err != nil {
			t.Fatalf("the new placement did not show within %s of the scheduler's: %v", testenv.LiveWithin, err)
		}
		testenv.NoReload(t, ctx, false)
	})

	t.Run("cluster and policies", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"clusters/dash-b")); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitText(ctx, "main", "Workloads placed here", 10*time.Second); err != nil {
			t.Fatal(err)
		}
		if got := testenv.Text(t, ctx, "main"); !strings.Contains(got, "Deployment dash-team/web") || !strings.Contains(got, "apps/v1 (1 kinds)") ||
			strings.Contains(got, "dash-other/plans") {
			t.Fatalf("dash-b's page:\n%s", got)
		}
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"policies")); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitText(ctx, `[data-policy="dash-team/web"]`, "Deployment named web", 10*time.Second); err != nil {
			t.Fatalf("no row for the policy dash-team/web: %v", err)
		}
		if got := testenv.Text(t, ctx, `[data-policy="dash-team/web"]`); !strings.Contains(got, "clusters dash-a, dash-b, dash-c; Divided") {
			t.Fatalf("the policy's row: %s", got)
		}
	})

	t.Run("add-ons of a cluster, live", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"clusters/dash-b")); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitText(ctx, "main", "No add-on is enabled on this cluster.", 10*time.Second); err != nil {
			t.Fatalf("dash-b's page has no add-ons section: %v\n%s", err, testenv.Text(t, ctx, "main"))
		}
		manualAddOn(t, "dash-hello")
		testenv.NoReload(t, ctx, true)
		ca := &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace("dash-b"), Name: "dash-hello",
			Labels: map[string]string{addonv1alpha1.LabelAddOn: "dash-hello"}}}
		create(t, ca)
		if err := testenv.WaitText(ctx, `[data-addon="dash-hello"]`, "dash-hello", testenv.LiveWithin); err != nil {
			t.Fatalf("the add-on did not show within %s: %v\n%s", testenv.LiveWithin, err, testenv.Text(t, ctx, "main"))
		}
		// The page says what the hub says: set a status (the hub's add-on controller, where it runs, may
		// write its own) and wait until the row shows the object's Available and Degraded, whatever wrote them.
		ca.Status.Conditions = []metav1.Condition{
			{Type: addonv1alpha1.ConditionAvailable, Status: metav1.ConditionFalse, Reason: "Unhealthy", Message: "Deployment hello: 0/1 ready", LastTransitionTime: metav1.Now()},
			{Type: addonv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: "Unhealthy", Message: "Deployment hello: 0/1 ready", LastTransitionTime: metav1.Now()}}
		if err := env.Client.Status().Update(context.Background(), ca); err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err) // a conflict: the hub wrote the status first
		}
		testenv.Eventually(t, testenv.LiveWithin, "dash-b's add-on row showing the ClusterAddOn's conditions", func() error {
			now := &addonv1alpha1.ClusterAddOn{}
			if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(ca), now); err != nil {
				return err
			}
			row := testenv.Text(t, ctx, `[data-addon="dash-hello"]`)
			for _, want := range []string{conditionText(now.Status.Conditions, addonv1alpha1.ConditionAvailable),
				conditionText(now.Status.Conditions, addonv1alpha1.ConditionDegraded), "hand"} {
				if !strings.Contains(row, want) {
					return fmt.Errorf("the row %q lacks %q", row, want)
				}
			}
			if a := meta.FindStatusCondition(now.Status.Conditions, addonv1alpha1.ConditionAvailable); a == nil || a.Status != metav1.ConditionTrue {
				if a != nil && !strings.Contains(row, a.Message) {
					return fmt.Errorf("the row %q does not say why it is not available (%q)", row, a.Message)
				}
			}
			return nil
		})
		testenv.NoReload(t, ctx, false)
	})

	t.Run("phone width", func(t *testing.T) {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(390, 844), chromedp.Navigate(url+"workloads")); err != nil {
			t.Fatal(err)
		}
		wide, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("document.documentElement.scrollWidth <= window.innerWidth + 1"))
		if err != nil || !wide {
			t.Fatalf("the workloads page scrolls sideways at 390 px (%v)", err)
		}
		_ = chromedp.Do(ctx, chromedp.EmulateViewport(1366, 768))
	})

	t.Run("a namespace user sees only its workloads", func(t *testing.T) {
		url := startDashboard(t, ctx, namespaceUserKubeconfig(t, "dash-alice", "dash-team"))
		if err := chromedp.Do(ctx, chromedp.Navigate(url+"workloads")); err != nil {
			t.Fatal(err)
		}
		if err := testenv.WaitText(ctx, `[data-workload="dash-team/web"]`, "dash-a", 10*time.Second); err != nil {
			t.Fatalf("dash-alice does not see dash-team/web: %v\n%s", err, testenv.Text(t, ctx, "main"))
		}
		if got := testenv.Text(t, ctx, "main"); strings.Contains(got, "dash-other") || strings.Contains(got, "plans") {
			t.Fatalf("dash-alice sees another namespace's workload:\n%s", got)
		}
	})
}

// namespaceUserKubeconfig writes a kubeconfig that acts as user (through the admin's impersonation), who
// may read templates, bindings and policies in namespace only.
func namespaceUserKubeconfig(t *testing.T, user, namespace string) string {
	t.Helper()
	grantNamespaceReader(t, namespace, user, rbacv1.UserKind)
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	current := cfg.Contexts[cfg.CurrentContext]
	current.Namespace = namespace
	cfg.AuthInfos[current.AuthInfo].Impersonate = user
	path := filepath.Join(t.TempDir(), user+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// grantNamespaceReader lets a User or ServiceAccount (of namespace) read templates, bindings and policies in
// namespace, and nothing else.
func grantNamespaceReader(t *testing.T, namespace, name, kind string) {
	t.Helper()
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "reader-" + name},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"work.flotilla.io", "policy.flotilla.io", "apps", ""}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		}})
	subject := rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	if kind == rbacv1.ServiceAccountKind {
		subject = rbacv1.Subject{Kind: kind, Name: name, Namespace: namespace}
	}
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "reader-" + name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader-" + name},
		Subjects: []rbacv1.Subject{subject}})
}

// conditionText is a condition's status as the dashboard writes it, Unknown until it is set.
func conditionText(conditions []metav1.Condition, t string) string {
	if c := meta.FindStatusCondition(conditions, t); c != nil {
		return string(c.Status)
	}
	return string(metav1.ConditionUnknown)
}
