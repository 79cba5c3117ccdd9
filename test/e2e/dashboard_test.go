package e2e

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestDashboardOnTheFleet: flotilla dashboard on the shared fleet shows the members Ready, a Deployment
// divided over m1 and m2 applied and healthy there, why it is not on m3, and a scale without a reload; it
// takes the README's screenshots.
func TestDashboardOnTheFleet(t *testing.T) {
	ctx := testenv.Browser(t)
	f := useFleet(t)
	f.createDeployment(t, deployment(f.ns, "web", 4))
	f.createPolicy(t, "web", deploymentSelector("web"), placementOn("m1", "m2"), func(p *policyv1alpha1.PropagationPolicy) {
		p.Spec.Placement.ReplicaScheduling = &policyv1alpha1.ReplicaSchedulingStrategy{ReplicaSchedulingType: policyv1alpha1.ReplicaSchedulingDivided}
	})
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2, f.m2: 2, f.m3: -1})

	p := testenv.StartBinary(t, framework.Binary(t), "flotilla-dashboard", "dashboard", "--kubeconfig", f.hub.Kubeconfig, "--port", "0")
	var url string
	testenv.Eventually(t, time.Minute, "flotilla dashboard serving", func() error {
		_, rest, ok := strings.Cut(p.Output(), "dashboard at ")
		if !ok {
			return errors.New("not yet:\n" + p.Output())
		}
		url = strings.Fields(rest)[0]
		return nil
	})
	// The printed URL carries the run's token; the browser keeps it as a cookie and is sent to the
	// dashboard's URL without it.
	if err := chromedp.Do(ctx, chromedp.Navigate(url), chromedp.WaitVisible("main")); err != nil {
		t.Fatal(err)
	}
	url, _, _ = strings.Cut(url, "?")
	shot := func(name string) {
		testenv.Screenshot(t, ctx, filepath.Join("..", "..", "docs", "dashboard", name+".png"))
	}

	if err := chromedp.Do(ctx, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	for _, m := range []string{"m1", "m2", "m3"} {
		if err := testenv.WaitText(ctx, fmt.Sprintf(`[data-cluster=%q]`, m), "Ready: True", 30*time.Second); err != nil {
			t.Fatalf("%s's tile is not Ready: %v\n%s", m, err, testenv.Text(t, ctx, "main"))
		}
	}
	if tile := testenv.Text(t, ctx, `[data-cluster="m3"]`); !strings.Contains(tile, "Push") || !strings.Contains(tile, "3/3") {
		t.Fatalf("m3's tile: %s", tile)
	}
	shot("fleet")

	row := fmt.Sprintf(`[data-workload="%s/web"]`, f.ns)
	if err := chromedp.Do(ctx, chromedp.Navigate(url+"workloads?namespace="+f.ns)); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitText(ctx, row, "m2: 2 ✔ applied, Healthy", time.Minute); err != nil {
		t.Fatalf("the row of web: %v\n%s", err, testenv.Text(t, ctx, "main"))
	}
	if err := chromedp.Do(ctx, chromedp.Focus(row+" a"), chromedp.KeyEvent("\r"), chromedp.WaitVisible("#why-not")); err != nil {
		t.Fatal(err)
	}
	if err := testenv.WaitText(ctx, ".whynot", "ClusterAffinity: do not match the cluster affinity", 30*time.Second); err != nil {
		t.Fatalf("why not m3: %v\n%s", err, testenv.Text(t, ctx, "main"))
	}
	shot("workload")
	if err := chromedp.Do(ctx, chromedp.Evaluate[chromedp.Void](`document.getElementById("why-not").scrollIntoView({block: "start"})`)); err != nil {
		t.Fatal(err)
	}
	shot("why-not")

	testenv.NoReload(t, ctx, true)
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":6}}`))
	d := deployment(f.ns, "web", 0)
	if err := f.hub.Client.Patch(context.Background(), d, patch); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "web placed 3 and 3", func() error {
		b := &workv1alpha1.ResourceBinding{}
		if err := f.hub.Client.Get(context.Background(), client.ObjectKey{Namespace: f.ns, Name: "web-deployment"}, b); err != nil {
			return err
		}
		if len(b.Spec.Clusters) != 2 || b.Spec.Clusters[0].Replicas != 3 || b.Spec.Clusters[1].Replicas != 3 {
			return fmt.Errorf("placed %v", b.Spec.Clusters)
		}
		return nil
	})
	if err := testenv.WaitText(ctx, "main", "m1: 3 replicas", testenv.LiveWithin); err != nil {
		t.Fatalf("the scale did not show within %s of the placement: %v", testenv.LiveWithin, err)
	}
	testenv.NoReload(t, ctx, false)
}
