package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mirror"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// ocmManifestWork is a ManifestWork as OCM documents one, in the namespace named after the cluster mw-push:
// a ConfigMap created once (CreateOnly), a ConfigMap the member owns that is only read (ReadOnly, with a
// JSONPaths feedback rule), and a Deployment with WellKnownStatus and JSONPaths feedback rules, applied by
// server-side apply with force.
const ocmManifestWork = `apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata:
  name: app
  namespace: mw-push
spec:
  workload:
    manifests:
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: created-once, namespace: mw-apps}
        data: {greeting: "%s"}
      - apiVersion: v1
        kind: ConfigMap
        metadata: {name: member-owned, namespace: mw-apps}
        data: {owner: hub}
      - apiVersion: apps/v1
        kind: Deployment
        metadata: {name: web, namespace: mw-apps}
        spec:
          replicas: %d
          selector: {matchLabels: {app: web}}
          template:
            metadata: {labels: {app: web}}
            spec: {containers: [{name: web, image: nginx}]}
  manifestConfigs:
    - resourceIdentifier: {resource: configmaps, namespace: mw-apps, name: created-once}
      updateStrategy: {type: CreateOnly}
    - resourceIdentifier: {resource: configmaps, namespace: mw-apps, name: member-owned}
      updateStrategy: {type: ReadOnly}
    - resourceIdentifier: {group: apps, resource: deployments, namespace: mw-apps, name: web}
      updateStrategy: {type: ServerSideApply, serverSideApply: {force: true}}
      feedbackRules:
        - type: WellKnownStatus
        - type: JSONPaths
          jsonPaths: [{name: available, path: '.conditions[?(@.type=="Available")].status'}, {name: desired, path: .spec.replicas}]
`

// TestOCMManifestWork: a ManifestWork written unchanged in work.open-cluster-management.io reaches the member
// through Flotilla's Work and the push executor (the member is the test hub itself): the CreateOnly
// ConfigMap keeps the member's edit after the ManifestWork changes while the Deployment takes the change;
// the ReadOnly ConfigMap is read and never written; the Deployment's feedback values and the conditions
// Applied, Available and Degraded show in the ManifestWork's status in OCM's words. Deleting it
// (Foreground) deletes what it created and leaves the ReadOnly object; deleteOption Orphan keeps the
// objects, released. A ManifestWork in the namespace of a cluster not joined yet waits for it.
func TestOCMManifestWork(t *testing.T) {
	ctx := context.Background()
	pushCluster(t, "mw-push", map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
	createNamespace(t, "mw-push")
	createNamespace(t, "mw-apps")
	memberOwned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "mw-apps", Name: "member-owned"}, Data: map[string]string{"owner": "member"}}
	create(t, memberOwned)

	mw := parseObject(t, fmt.Sprintf(ocmManifestWork, "hello", 2))
	if err := env.Client.Create(ctx, mw); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), mw) })

	// The Work, in the cluster's Flotilla namespace, marked as the ManifestWork's and held for the executor.
	work := &workv1alpha1.Work{}
	workKey := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace("mw-push"), Name: "app"}
	testenv.Eventually(t, 30*time.Second, "the ManifestWork's Work", func() error { return env.Client.Get(ctx, workKey, work) })
	if work.Annotations[mirror.AnnotationPeer] != "work.open-cluster-management.io/ManifestWork/mw-push/app" ||
		!controllerutil.ContainsFinalizer(work, workv1alpha1.FinalizerExecution) {
		t.Errorf("the Work is not marked as the ManifestWork's: annotations %v, finalizers %v", work.Annotations, work.Finalizers)
	}

	// The Deployment rolls out (the test hub runs no Deployment controller: its status is written here).
	web := &appsv1.Deployment{}
	testenv.Eventually(t, time.Minute, "the Deployment in the member", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: "mw-apps", Name: "web"}, web)
	})
	rollOut(t, web)
	testenv.Eventually(t, time.Minute, "feedback and conditions in the ManifestWork's status", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(mw), mw); err != nil {
			return err
		}
		for _, c := range []string{"Applied=True", "Available=True", "Degraded=False"} {
			typ, status, _ := strings.Cut(c, "=")
			if got := conditionStatus(mw, typ); got != status {
				return fmt.Errorf("condition %s is %q, want %s", typ, got, status)
			}
		}
		// Paths are under the status, as OCM's: .spec.replicas returns nothing.
		want := map[string]string{"web/ReadyReplicas": "2", "web/Replicas": "2", "web/AvailableReplicas": "2", "web/available": "True"}
		got := feedbackOf(mw)
		for k, v := range want {
			if got[k] != v {
				return fmt.Errorf("feedback %s = %q, want %s (all: %v)", k, got[k], v, got)
			}
		}
		if v, found := got["web/desired"]; found {
			return fmt.Errorf("feedback web/desired = %q: a path outside the status returned a value", v)
		}
		return nil
	})

	// A member edit of the CreateOnly ConfigMap stays when the ManifestWork changes; the Deployment changes.
	once := &corev1.ConfigMap{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "mw-apps", Name: "created-once"}, once); err != nil {
		t.Fatal(err)
	}
	once.Data["greeting"] = "edited in the member"
	if err := env.Client.Update(ctx, once); err != nil {
		t.Fatal(err)
	}
	changed := parseObject(t, fmt.Sprintf(ocmManifestWork, "changed on the hub", 3))
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(mw), mw); err != nil {
		t.Fatal(err)
	}
	mw.Object["spec"] = changed.Object["spec"]
	if err := env.Client.Update(ctx, mw); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the Deployment changed to 3 replicas", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			return err
		}
		if r := ptr.Deref(web.Spec.Replicas, 0); r != 3 {
			return fmt.Errorf("replicas %d", r)
		}
		return nil
	})
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(once), once); err != nil || once.Data["greeting"] != "edited in the member" {
		t.Errorf("the CreateOnly ConfigMap was written again: %v %v", err, once.Data)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(memberOwned), memberOwned); err != nil ||
		memberOwned.Data["owner"] != "member" || len(memberOwned.Labels)+len(memberOwned.Annotations) != 0 {
		t.Errorf("the ReadOnly ConfigMap was written: %v data %v labels %v annotations %v", err, memberOwned.Data, memberOwned.Labels, memberOwned.Annotations)
	}

	// Foreground (the default): deleting the ManifestWork deletes what it created, not what it only read.
	if err := env.Client.Delete(ctx, mw); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, work, time.Minute)
	testenv.EventuallyGone(t, env.Client, mw, time.Minute)
	testenv.Eventually(t, time.Minute, "the created objects deleted from the member", func() error {
		for _, o := range []client.Object{&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "mw-apps", Name: "created-once"}}, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "mw-apps", Name: "web"}}} {
			if present(t, o) {
				return fmt.Errorf("%s still there", o.GetName())
			}
		}
		return nil
	})
	if !present(t, memberOwned) {
		t.Error("the ReadOnly ConfigMap was deleted with the ManifestWork")
	}

	// Orphan: deleting the ManifestWork keeps its objects, released from Flotilla.
	orphan := parseObject(t, `apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: kept, namespace: mw-push}
spec:
  deleteOption: {propagationPolicy: Orphan}
  workload:
    manifests:
      - {apiVersion: v1, kind: ConfigMap, metadata: {name: orphaned, namespace: mw-apps}, data: {a: b}}
`)
	if err := env.Client.Create(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	orphaned := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "mw-apps", Name: "orphaned"}}
	testenv.Eventually(t, time.Minute, "the orphaning ManifestWork applied", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(orphan), orphan); err != nil {
			return err
		}
		if conditionStatus(orphan, "Applied") != "True" || !present(t, orphaned) {
			return errors.New("not applied yet")
		}
		return nil
	})
	if err := env.Client.Delete(ctx, orphan); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyGone(t, env.Client, &workv1alpha1.Work{ObjectMeta: metav1.ObjectMeta{Namespace: workKey.Namespace, Name: "kept"}}, time.Minute)
	testenv.Eventually(t, 30*time.Second, "the orphaned ConfigMap released", func() error {
		if !present(t, orphaned) {
			return errors.New("the orphaned ConfigMap was deleted")
		}
		if v := orphaned.Labels[workv1alpha1.LabelManagedBy]; v != "" {
			return fmt.Errorf("still labelled managed-by %s", v)
		}
		return nil
	})

	// A ManifestWork of a cluster that has not joined yet is told so, and mirrored once the cluster joins.
	createNamespace(t, "mw-late")
	late := parseObject(t, `apiVersion: work.open-cluster-management.io/v1
kind: ManifestWork
metadata: {name: early, namespace: mw-late}
spec: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: early, namespace: mw-apps}}]}}
`)
	if err := env.Client.Create(ctx, late); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), late) })
	waitEvent(t, env, "early", mirror.ReasonMirrorFailed)
	createPullCluster(t, "mw-late")
	testenv.Eventually(t, 2*time.Minute, "the late cluster's Work", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace("mw-late"), Name: "early"}, &workv1alpha1.Work{})
	})
}

// TestOCMManifestWorkRefusesUnknownFields: fields of ManifestWork that Flotilla does not act on are refused
// when written, not silently ignored.
func TestOCMManifestWorkRefusesUnknownFields(t *testing.T) {
	createNamespace(t, "mw-strict")
	for field, spec := range map[string]string{
		"executor":       "executor: {subject: {type: ServiceAccount, serviceAccount: {namespace: a, name: b}}}",
		"conditionRules": "manifestConfigs: [{resourceIdentifier: {resource: configmaps, name: a}, conditionRules: [{type: WellKnownCompletions}]}]",
		"ignoreFields":   "manifestConfigs: [{resourceIdentifier: {resource: configmaps, name: a}, updateStrategy: {type: ServerSideApply, serverSideApply: {ignoreFields: [{condition: OnSpokePresent, jsonPaths: [.data]}]}}}]",
	} {
		mw := parseObject(t, "apiVersion: work.open-cluster-management.io/v1\nkind: ManifestWork\nmetadata: {name: strict, namespace: mw-strict}\nspec: {"+spec+"}\n")
		err := env.Client.Create(context.Background(), mw, client.DryRunAll, client.FieldValidation("Strict"))
		if err == nil || !strings.Contains(err.Error(), "unknown field") {
			t.Errorf("%s: accepted (%v)", field, err)
		}
	}
}

// rollOut writes the status a Deployment controller would once every replica is available.
func rollOut(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the Deployment's status written", func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		n := ptr.Deref(d.Spec.Replicas, 1)
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue, Reason: "MinimumReplicasAvailable"}}}
		return env.Client.Status().Update(context.Background(), d)
	})
}

// conditionStatus is the status of a condition of an object's status.conditions, or "".
func conditionStatus(u *unstructured.Unstructured, typ string) string {
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		if c, ok := c.(map[string]any); ok && c["type"] == typ {
			return fmt.Sprint(c["status"])
		}
	}
	return ""
}

// feedbackOf lists a ManifestWork's feedback values as OBJECT/NAME: value.
func feedbackOf(mw *unstructured.Unstructured) map[string]string {
	out := map[string]string{}
	manifests, _, _ := unstructured.NestedSlice(mw.Object, "status", "resourceStatus", "manifests")
	for _, m := range manifests {
		m, _ := m.(map[string]any)
		name, _, _ := unstructured.NestedString(m, "resourceMeta", "name")
		values, _, _ := unstructured.NestedSlice(m, "statusFeedback", "values")
		for _, v := range values {
			v, _ := v.(map[string]any)
			value, _ := v["fieldValue"].(map[string]any)
			for _, k := range []string{"integer", "string", "boolean", "jsonRaw"} {
				if x, ok := value[k]; ok {
					out[name+"/"+fmt.Sprint(v["name"])] = fmt.Sprint(x)
				}
			}
		}
	}
	return out
}
