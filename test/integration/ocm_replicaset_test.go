package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmaddonv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/addon/v1alpha1"
	ocmworkv1 "github.com/flotilla-io/flotilla/api/ocm/work/v1"
	ocmworkv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/work/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// replicaSetTemplate is a ManifestWork template of one ConfigMap, created once (both push clusters of the
// test are the test hub itself, so the second finds the first's object and leaves it as it is).
func replicaSetTemplate(version string) ocmworkv1.ManifestWorkSpec {
	cm := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mwrs-web","namespace":"mwrs-apps"},"data":{"version":%q}}`, version)
	return ocmworkv1.ManifestWorkSpec{
		Workload: ocmworkv1.ManifestsTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{Raw: []byte(cm)}}}},
		ManifestConfigs: []ocmworkv1.ManifestConfigOption{{
			ResourceIdentifier: ocmworkv1.ResourceIdentifier{Resource: "configmaps", Namespace: "mwrs-apps", Name: "mwrs-web"},
			UpdateStrategy:     &ocmworkv1.UpdateStrategy{Type: "CreateOnly"}}},
	}
}

// TestOCMManifestWorkReplicaSet: a ManifestWorkReplicaSet over a Placement of two push clusters creates a
// ManifestWork, named after it and labelled with it, in each cluster's namespace, and each gets its Work; its
// status counts them applied and available and its conditions say the placement is verified, rolled out and
// applied. A template change rolled out Progressive with maxConcurrency 1 reaches the first cluster (by name)
// while the second keeps the old template, then the second. Deleting it deletes its ManifestWorks.
func TestOCMManifestWorkReplicaSet(t *testing.T) {
	ctx := context.Background()
	const ns, set = "mwrs", "mwrs-set"
	a, b := "mwrs-a", "mwrs-b"
	createNamespace(t, ns)
	createNamespace(t, "mwrs-apps")
	exclusiveSet(t, set)
	create(t, setBinding(ns, set))
	for _, c := range []string{a, b} {
		pushCluster(t, c, map[string][]byte{"token": []byte(memberToken(t)), "caBundle": env.Config.CAData}, nil)
		t.Cleanup(func() {
			_ = env.Client.Delete(context.Background(), &clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: c}})
		})
		setClusterLabel(t, c, clusterv1alpha1.LabelClusterSet, set)
		createNamespace(t, c) // OCM's namespace of the cluster
	}
	placement := &clusterv1alpha1.Placement{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	placement.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	create(t, placement)

	rs := &ocmworkv1alpha1.ManifestWorkReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: ocmworkv1alpha1.ManifestWorkReplicaSetSpec{ManifestWorkTemplate: replicaSetTemplate("1"),
			PlacementRefs: []ocmworkv1alpha1.LocalPlacementReference{{Name: "web", RolloutStrategy: &ocmaddonv1alpha1.RolloutStrategy{
				Type: "Progressive", Progressive: &ocmaddonv1alpha1.RolloutProgressive{MaxConcurrency: ptr.To(intstr.FromInt32(1)),
					RolloutConfig: ocmaddonv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: 5 * time.Second}}}}}}}}
	// A namespace editor with RBAC on replica sets may not write one: its ManifestWorks could install anything
	// on the decided clusters.
	const editor = "mwrs-team-editor"
	create(t, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mwrs-editor"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{ocmworkv1alpha1.GroupVersion.Group}, Resources: []string{"manifestworkreplicasets"}, Verbs: []string{"*"}}}})
	create(t, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mwrs-editor"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "mwrs-editor"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: editor}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: editor}
	asEditor, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the editor refused by the replica set rule", func() error {
		err := asEditor.Create(ctx, rs.DeepCopy(), client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "needs create on manifestworks") {
			return fmt.Errorf("got %v", err)
		}
		return nil
	})

	create(t, rs)
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), rs) })

	version := func(cluster string) (mw, work string, err error) {
		m := &ocmworkv1.ManifestWork{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: cluster, Name: "web"}, m); err != nil {
			return "", "", err
		}
		if m.Labels[ocmworkv1alpha1.LabelReplicaSet] != ns+".web" {
			return "", "", fmt.Errorf("ManifestWork %s/web labelled %v", cluster, m.Labels)
		}
		w := &workv1alpha1.Work{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace(cluster), Name: "web"}, w); err != nil {
			return "", "", err
		}
		return manifestVersion(t, m.Spec.Workload.Manifests), manifestVersion(t, w.Spec.Workload.Manifests), nil
	}
	for _, c := range []string{a, b} {
		testenv.Eventually(t, time.Minute, "the ManifestWork and Work of "+c, func() error {
			mw, work, err := version(c)
			if err == nil && (mw != "1" || work != "1") {
				err = fmt.Errorf("versions %s and %s", mw, work)
			}
			return err
		})
	}
	waitReplicaSet(t, rs, "summary 2 applied and available, every condition True", func() error {
		if s := rs.Status.Summary; s.Total != 2 || s.Applied != 2 || s.Available != 2 || s.Degraded != 0 {
			return fmt.Errorf("summary %+v", s)
		}
		for _, typ := range []string{ocmworkv1alpha1.ConditionPlacementVerified, ocmworkv1alpha1.ConditionPlacementRolledOut, ocmworkv1alpha1.ConditionManifestworkApplied} {
			if !meta.IsStatusConditionTrue(rs.Status.Conditions, typ) {
				return fmt.Errorf("condition %s not True: %+v", typ, rs.Status.Conditions)
			}
		}
		if len(rs.Status.PlacementsSummary) != 1 || rs.Status.PlacementsSummary[0].Summary.Total != 2 {
			return fmt.Errorf("placement summary %+v", rs.Status.PlacementsSummary)
		}
		return nil
	})

	// A template change: a first (by name), b only once a has been healthy on it for minSuccessTime.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rs), rs); err != nil {
			return err
		}
		rs.Spec.ManifestWorkTemplate = replicaSetTemplate("2")
		return env.Client.Update(ctx, rs)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the new template on "+a, func() error {
		_, work, err := version(a)
		if err == nil && work != "2" {
			err = fmt.Errorf("%s's Work at version %s", a, work)
		}
		return err
	})
	if mw, work, err := version(b); err != nil || mw != "1" || work != "1" {
		t.Errorf("%s took the new template with %s: ManifestWork %s, Work %s (%v); want the old one until %s succeeded", b, a, mw, work, err, a)
	}
	testenv.Eventually(t, time.Minute, "the new template on "+b, func() error {
		mw, work, err := version(b)
		if err == nil && (mw != "2" || work != "2") {
			err = fmt.Errorf("versions %s and %s", mw, work)
		}
		return err
	})
	waitReplicaSet(t, rs, "the rollout complete in two waves", func() error {
		if len(rs.Status.PlacementRollouts) != 1 {
			return fmt.Errorf("rollouts %+v", rs.Status.PlacementRollouts)
		}
		r := rs.Status.PlacementRollouts[0].Rollout
		if r.TargetRevision != 2 || r.StableRevision != 2 || r.Wave != 2 || !meta.IsStatusConditionTrue(rs.Status.Conditions, ocmworkv1alpha1.ConditionPlacementRolledOut) {
			return fmt.Errorf("rollout %+v, conditions %+v", r, rs.Status.Conditions)
		}
		return nil
	})

	// Deleting it deletes its ManifestWorks (in other namespaces), then it goes.
	if err := env.Client.Delete(ctx, rs); err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{a, b} {
		testenv.EventuallyGone(t, env.Client, &ocmworkv1.ManifestWork{ObjectMeta: metav1.ObjectMeta{Namespace: c, Name: "web"}}, time.Minute)
	}
	testenv.EventuallyGone(t, env.Client, rs, time.Minute)
}

// manifestVersion is the version in the data of the first manifest, a ConfigMap.
func manifestVersion(t *testing.T, manifests []workv1alpha1.Manifest) string {
	t.Helper()
	if len(manifests) == 0 {
		return ""
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(manifests[0].Raw, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data["version"]
}

// waitReplicaSet waits until check, run on the ManifestWorkReplicaSet read again, passes.
func waitReplicaSet(t *testing.T, rs *ocmworkv1alpha1.ManifestWorkReplicaSet, what string, check func() error) {
	t.Helper()
	testenv.Eventually(t, time.Minute, what, func() error {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(rs), rs); err != nil {
			return err
		}
		return check()
	})
}
