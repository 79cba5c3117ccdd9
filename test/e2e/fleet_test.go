package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// shared is the fleet most tests run on: a hub that marks a silent cluster Unknown after 20 s, members m1
// (labelled team=blue) and m2 in eu-west-1 joined in pull mode, and m3 in us-east-1 joined in push mode.
var shared = framework.NewShared(func(t *testing.T, s *framework.Shared) {
	hub := s.StartHub(t, "--cluster-grace-period", "20s")
	m1, m2, m3 := s.StartMember(t, "m1"), s.StartMember(t, "m2"), s.StartMember(t, "m3")
	framework.JoinPull(t, hub, m1, "--region", "eu-west-1", "--labels", "team=blue")
	framework.JoinPull(t, hub, m2, "--region", "eu-west-1")
	framework.JoinPush(t, hub, m3, "--region", "us-east-1")
	framework.WaitClustersReady(t, hub, "m1", "m2", "m3")
})

func TestMain(m *testing.M) {
	code := m.Run()
	shared.Stop()
	os.Exit(code)
}

// fleet is the shared fleet as one test sees it, with the namespace the test works in.
type fleet struct {
	hub, m1, m2, m3 *framework.Cluster
	ns              string
}

// useFleet starts the shared fleet if no test did yet and gives the test a namespace of its own on the hub.
func useFleet(t *testing.T) *fleet {
	t.Helper()
	c := shared.Use(t)
	return &fleet{hub: c["hub"], m1: c["m1"], m2: c["m2"], m3: c["m3"], ns: c["hub"].Namespace()}
}

// createDeployment creates a Deployment template in the test's namespace on the hub.
func (f *fleet) createDeployment(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	d.Namespace = f.ns
	if _, err := f.hub.Kube.AppsV1().Deployments(f.ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createPolicy creates a PropagationPolicy in the test's namespace on the hub.
func (f *fleet) createPolicy(t *testing.T, name string, selector policyv1alpha1.ResourceSelector, placement policyv1alpha1.Placement,
	change ...func(*policyv1alpha1.PropagationPolicy)) *policyv1alpha1.PropagationPolicy {
	t.Helper()
	p := propagationPolicy(f.ns, name, selector, placement)
	for _, c := range change {
		c(p)
	}
	if err := f.hub.Client.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// update reads obj from the hub, changes it and writes it back, reading it again when a controller wrote it
// in between: Flotilla writes the status of policies and templates while tests change their specs.
func update[T client.Object](t *testing.T, hub *framework.Cluster, obj T, change func(T)) {
	t.Helper()
	ctx := context.Background()
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := hub.Client.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		change(obj)
		return hub.Client.Update(ctx, obj)
	}); err != nil {
		t.Fatal(err)
	}
}

// memberNamespace creates the test's namespace in a member, for objects a test puts there itself.
func (f *fleet) memberNamespace(t *testing.T, m *framework.Cluster) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: f.ns}}
	if _, err := m.Kube.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func deployment(namespace, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx"}}},
			},
		},
	}
}

func placementOn(clusters ...string) policyv1alpha1.Placement {
	return policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: clusters}}
}

func propagationPolicy(namespace, name string, selector policyv1alpha1.ResourceSelector, placement policyv1alpha1.Placement) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{selector}, Placement: placement},
	}
}

func deploymentSelector(name string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

// replicasIn returns the Deployment's spec replicas in a member, or -1 when it is not there.
func replicasIn(ctx context.Context, c *framework.Cluster, namespace, name string) (int32, *appsv1.Deployment, error) {
	d, err := c.Kube.AppsV1().Deployments(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return -1, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	return ptr.Deref(d.Spec.Replicas, 1), d, nil
}

// waitPlaced waits until every member holds the Deployment with the given replicas (-1: absent), each
// Available where present.
func waitPlaced(t *testing.T, namespace, name string, want map[*framework.Cluster]int32) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, 2*time.Minute, "placement of "+name, func() error {
		for c, replicas := range want {
			got, d, err := replicasIn(ctx, c, namespace, name)
			if err != nil {
				return err
			}
			if got != replicas {
				return fmt.Errorf("%s runs %d replicas, want %d", c.Name, got, replicas)
			}
			if d != nil && d.Status.AvailableReplicas != replicas {
				return fmt.Errorf("%s has %d/%d available; %s", c.Name, d.Status.AvailableReplicas, replicas, podsNotReady(ctx, c, namespace, name))
			}
		}
		return nil
	})
}

// podsNotReady says why a member's pods of a Deployment are not ready, for a failure message: each one's
// phase, node and the reason its scheduling or readiness gives.
func podsNotReady(ctx context.Context, c *framework.Cluster, namespace, name string) string {
	pods, err := c.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + name})
	if err != nil {
		return "pods unread: " + err.Error()
	}
	var notReady []string
	for _, p := range pods.Items {
		ready := false
		var why []string
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				ready = true
			}
			if cond.Status != corev1.ConditionTrue {
				why = append(why, fmt.Sprintf("%s=%s %s %s", cond.Type, cond.Status, cond.Reason, cond.Message))
			}
		}
		if !ready || p.DeletionTimestamp != nil {
			notReady = append(notReady, fmt.Sprintf("%s %s on %q deleting=%t %v", p.Name, p.Status.Phase, p.Spec.NodeName, p.DeletionTimestamp != nil, why))
		}
	}
	return fmt.Sprintf("%d pods, not ready: %v", len(pods.Items), notReady)
}
