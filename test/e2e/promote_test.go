package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestPromoteKeepsPodsRunning: a Deployment and the ConfigMap it reads, created in m1 by hand, are promoted
// with `flotilla promote --dependencies`: a client dry run prints them and the policy and creates nothing;
// the real run creates them on the hub with a policy that places them on m1, Flotilla takes the member's
// Deployment over, and its pods are the same pods (same UIDs, the same ReplicaSet: nothing restarted). A second
// promote is refused, since the objects are on the hub.
func TestPromoteKeepsPodsRunning(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	f.memberNamespace(t, f.m1)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config", Namespace: f.ns}, Data: map[string]string{"MODE": "live"}}
	if _, err := f.m1.Kube.CoreV1().ConfigMaps(f.ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	d := deployment(f.ns, "web", 2)
	d.Spec.Template.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}}
	if _, err := f.m1.Kube.AppsV1().Deployments(f.ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var before, sets []string
	testenv.Eventually(t, 2*time.Minute, "web running in m1", func() error {
		got, err := f.m1.Kube.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.AvailableReplicas != 2 {
			return fmt.Errorf("%d/2 available", got.Status.AvailableReplicas)
		}
		if sets, err = replicaSetNames(ctx, f.m1, f.ns); err != nil {
			return err
		}
		before, err = podUIDs(ctx, f.m1, f.ns, "web")
		return err
	})

	args := []string{"promote", "deploy/web", "-n", f.ns, "--cluster", "m1", "--dependencies"}
	out := f.hub.Flotilla(append(args, "--dry-run=client")...)
	for _, want := range []string{"kind: PropagationPolicy", "name: promote-deployment-web", "kind: Deployment", "kind: ConfigMap", "MODE: live", "conflictResolution: Overwrite"} {
		if !strings.Contains(out, want) {
			t.Errorf("the client dry run does not show %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "uid:") || strings.Contains(out, "availableReplicas") {
		t.Errorf("the client dry run shows what the member set:\n%s", out)
	}
	if _, err := f.hub.Kube.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after a client dry run the template must not exist on the hub: %v", err)
	}

	out = f.hub.Flotilla(args...)
	for _, want := range []string{"created PropagationPolicy promote-deployment-web", "created deployments.apps/web on the hub", "created configmaps/web-config on the hub"} {
		if !strings.Contains(out, want) {
			t.Errorf("flotilla promote does not say %q:\n%s", want, out)
		}
	}
	policy := &policyv1alpha1.PropagationPolicy{}
	if err := f.hub.Client.Get(ctx, client.ObjectKey{Namespace: f.ns, Name: "promote-deployment-web"}, policy); err != nil {
		t.Fatal(err)
	}
	if policy.Spec.ConflictResolution != policyv1alpha1.ConflictOverwrite || !slices.Equal(policy.Spec.Placement.ClusterAffinity.ClusterNames, []string{"m1"}) {
		t.Errorf("the policy must take over on m1 alone: %+v", policy.Spec)
	}
	testenv.Eventually(t, 2*time.Minute, "m1's web and web-config taken over", func() error {
		got, err := f.m1.Kube.AppsV1().Deployments(f.ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		config, err := f.m1.Kube.CoreV1().ConfigMaps(f.ns).Get(ctx, "web-config", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, o := range []metav1.Object{got, config} {
			if o.GetLabels()[workv1alpha1.LabelManagedBy] != workv1alpha1.ManagedByValue {
				return fmt.Errorf("%s not yet applied by Flotilla: labels %v", o.GetName(), o.GetLabels())
			}
		}
		return nil
	})
	waitPlaced(t, f.ns, "web", map[*framework.Cluster]int32{f.m1: 2})
	time.Sleep(2 * time.Second) // a restart the takeover caused would have begun by now
	setsAfter, err := replicaSetNames(ctx, f.m1, f.ns)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sets, setsAfter) {
		t.Errorf("the takeover rolled web out anew: ReplicaSets %v → %v", sets, setsAfter)
	}
	after, err := podUIDs(ctx, f.m1, f.ns, "web")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(before, after) {
		t.Errorf("the takeover restarted web: pods %v → %v", before, after)
	}

	p := testenv.StartBinary(t, framework.Binary(t), "flotilla-promote", append(args, "--kubeconfig", f.hub.Kubeconfig)...)
	if err := p.Wait(time.Minute); err == nil || !strings.Contains(p.Output(), "deployments.apps/web is already on the hub") {
		t.Errorf("a second promote must be refused: %v\n%s", err, p.Output())
	}
}

// replicaSetNames lists the names of the ReplicaSets in a member's namespace, sorted.
func replicaSetNames(ctx context.Context, m *framework.Cluster, namespace string) ([]string, error) {
	sets, err := m.Kube.AppsV1().ReplicaSets(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var names []string
	for _, s := range sets.Items {
		names = append(names, s.Name)
	}
	slices.Sort(names)
	return names, nil
}

// podUIDs lists the UIDs of the pods labelled app=name in a member, sorted.
func podUIDs(ctx context.Context, m *framework.Cluster, namespace, name string) ([]string, error) {
	pods, err := m.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return nil, err
	}
	var uids []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			uids = append(uids, string(p.UID))
		}
	}
	if len(uids) == 0 {
		return nil, fmt.Errorf("no pods of %s", name)
	}
	slices.Sort(uids)
	return uids, nil
}
