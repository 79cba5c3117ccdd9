package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/quota"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// cpuDeployment is a Deployment of replicas pods that each request cpu.
func cpuDeployment(namespace, name string, replicas int32, cpu string) *appsv1.Deployment {
	d := retainDeployment(namespace, name, replicas, nil)
	d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	return d
}

// refusedWith fails unless err is the hub's refusal with message in it.
func refusedWith(t *testing.T, what string, err error, message string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s was admitted", what)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), message) {
		t.Fatalf("%s: %v\nwant a refusal saying %q", what, err, message)
	}
}

// quotaStatus waits until the quota's status passes check.
func quotaStatus(t *testing.T, q *policyv1alpha1.FederatedResourceQuota, what string, check func(s *policyv1alpha1.FederatedResourceQuotaStatus) error) {
	t.Helper()
	testenv.Eventually(t, hangGuard, what, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(q), q); err != nil {
			return err
		}
		if err := check(&q.Status); err != nil {
			return fmt.Errorf("%w (status %+v)", err, q.Status)
		}
		return nil
	})
}

func quantityIs(l corev1.ResourceList, name corev1.ResourceName, want string) error {
	if q, ok := l[name]; !ok || q.Cmp(resource.MustParse(want)) != 0 {
		return fmt.Errorf("%s is %s, want %s", name, q.String(), want)
	}
	return nil
}

// TestFederatedResourceQuota: overall {cpu: 2} in a namespace. A Deployment of 3 replicas of 1 CPU is refused
// with a message naming the resource, the request and what is left; 2 replicas pass and, placed, show in
// overallUsed; a scale to 3, by the scale subresource (kubectl scale's path) or by spec.replicas, is refused,
// a scale down passes, and a second Deployment gets only what is left. The static assignment is a
// ResourceQuota in the member (the test hub itself, a Push cluster) whose usage comes back in
// aggregatedStatus; removing the assignment, then deleting the quota, removes it from the member.
func TestFederatedResourceQuota(t *testing.T) {
	ctx := context.Background()
	const ns, cluster = "quota-team-a", "quota-member"
	pushCluster(t, cluster, map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
	t.Cleanup(func() {
		_ = env.Client.Delete(ctx, &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: cluster}})
	})
	createNamespace(t, ns)
	q := &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"},
		Spec: policyv1alpha1.FederatedResourceQuotaSpec{Overall: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
			StaticAssignments: []policyv1alpha1.StaticClusterAssignment{{ClusterName: cluster, Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}
	create(t, q)
	policy := namespacedPolicy(ns, "web", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment"})
	policy.Spec.Placement = policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{cluster}}}
	create(t, policy)

	err := env.Client.Create(ctx, cpuDeployment(ns, "web", 3, "1"))
	refusedWith(t, "3 replicas of 1 CPU", err, "exceeds FederatedResourceQuota quota-team-a/quota: cpu: requested 3, used 0, overall 2 (2 left)")
	web := cpuDeployment(ns, "web", 2, "1")
	create(t, web)
	testenv.Eventually(t, hangGuard, "web placed on "+cluster, func() error {
		b, err := binding(ctx, schema.GroupKind{Group: "apps", Kind: "Deployment"}, ns, "web")
		if err != nil {
			return err
		}
		if len(b.Spec.Clusters) != 1 || b.Spec.Clusters[0].Name != cluster {
			return fmt.Errorf("placed on %v", b.Spec.Clusters)
		}
		return nil
	})
	quotaStatus(t, q, "overallUsed cpu 2", func(s *policyv1alpha1.FederatedResourceQuotaStatus) error {
		if err := quantityIs(s.Overall, corev1.ResourceCPU, "2"); err != nil {
			return err
		}
		return quantityIs(s.OverallUsed, corev1.ResourceCPU, "2")
	})

	deployments := env.Kube.AppsV1().Deployments(ns)
	_, err = deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}, "scale")
	refusedWith(t, "a scale to 3", err, "exceeds FederatedResourceQuota quota-team-a/quota: cpu: requested 3, used 0, overall 2 (2 left)")
	_, err = deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{})
	refusedWith(t, "spec.replicas 3", err, "exceeds FederatedResourceQuota quota-team-a/quota: cpu: requested 3, used 0, overall 2 (2 left)")
	if _, err := deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":1}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("a scale down: %v", err)
	}
	quotaStatus(t, q, "overallUsed cpu 1 after the scale down", func(s *policyv1alpha1.FederatedResourceQuotaStatus) error {
		return quantityIs(s.OverallUsed, corev1.ResourceCPU, "1")
	})
	err = env.Client.Create(ctx, cpuDeployment(ns, "api", 2, "1"))
	refusedWith(t, "a second Deployment of 2 CPU", err, "cpu: requested 2, used 1, overall 2 (1 left)")
	create(t, cpuDeployment(ns, "api", 1, "1"))

	// The static assignment: a ResourceQuota in the member, whose usage (a pod requesting 250m, pending on
	// the hub that is the member) comes back in aggregatedStatus.
	member := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota"}}
	testenv.Eventually(t, hangGuard, "the member ResourceQuota", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(member), member); err != nil {
			return err
		}
		return quantityIs(member.Spec.Hard, corev1.ResourceCPU, "1")
	})
	if err := env.Client.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "default"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "in-member"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}}}}
	create(t, pod)
	quotaStatus(t, q, "the member's usage in aggregatedStatus, Enforced", func(s *policyv1alpha1.FederatedResourceQuotaStatus) error {
		if len(s.AggregatedStatus) != 1 || s.AggregatedStatus[0].ClusterName != cluster {
			return fmt.Errorf("aggregatedStatus %+v", s.AggregatedStatus)
		}
		if err := quantityIs(s.AggregatedStatus[0].Hard, corev1.ResourceCPU, "1"); err != nil {
			return err
		}
		if err := quantityIs(s.AggregatedStatus[0].Used, corev1.ResourceCPU, "250m"); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(s.Conditions, policyv1alpha1.FederatedResourceQuotaConditionEnforced); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("Enforced %+v", c)
		}
		return nil
	})

	// Removing the assignment removes the member's ResourceQuota; the quota's own deletion waits for its Works.
	if err := env.Client.Patch(ctx, q, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"staticAssignments":null}}`))); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, member, hangGuard)
	assign := fmt.Sprintf(`{"spec":{"staticAssignments":[{"clusterName":%q,"hard":{"cpu":"1"}}]}}`, cluster)
	if err := env.Client.Patch(ctx, q, client.RawPatch(types.MergePatchType, []byte(assign))); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, hangGuard, "the member ResourceQuota back", func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(member), member)
	})
	if err := env.Client.Delete(ctx, q); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, member, hangGuard)
	testenv.EventuallyGone(t, env.Client, q, hangGuard)
	testenv.EventuallyGone(t, env.Client, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: quota.WorkName(ns, "quota")}}, hangGuard)
	// Without a quota the namespace takes any size.
	if _, err := deployments.Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":30}}`), metav1.PatchOptions{}, "scale"); err != nil {
		t.Fatalf("a scale without a quota: %v", err)
	}
}
