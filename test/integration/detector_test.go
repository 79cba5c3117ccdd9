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
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/detector"
	"github.com/flotilla-io/flotilla/internal/registration"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// The detector's tests place nothing: their policies target a cluster that does not exist, so only the
// claims and bindings on the hub are at stake, and the other tests of the package see no Works.
var nowhere = policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"nowhere"}}}

// hangGuard bounds waits for the detector; it is not a performance assertion.
const hangGuard = time.Minute

func createNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), ns) })
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
}

func configMap(namespace, name string, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: labels}}
}

func clusterPolicy(name string, selectors ...policyv1alpha1.ResourceSelector) *policyv1alpha1.ClusterPropagationPolicy {
	return &policyv1alpha1.ClusterPropagationPolicy{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectors, Placement: nowhere}}
}

func namespacedPolicy(namespace, name string, selectors ...policyv1alpha1.ResourceSelector) *policyv1alpha1.PropagationPolicy {
	return &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectors, Placement: nowhere}}
}

func labelled(apiVersion, kind string, labels map[string]string) policyv1alpha1.ResourceSelector {
	return policyv1alpha1.ResourceSelector{APIVersion: apiVersion, Kind: kind, LabelSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

// binding reads the ResourceBinding of a namespaced template.
func binding(ctx context.Context, gk schema.GroupKind, namespace, name string) (*workv1alpha1.ResourceBinding, error) {
	b := &workv1alpha1.ResourceBinding{}
	return b, env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: workv1alpha1.BindingName(gk, name)}, b)
}

var configMapKind = schema.GroupKind{Kind: "ConfigMap"}

// waitBindings waits until every named ConfigMap of namespace has its binding.
func waitBindings(t *testing.T, namespace string, names []string) {
	t.Helper()
	testenv.Eventually(t, hangGuard, fmt.Sprintf("bindings of %d templates in %s", len(names), namespace), func() error {
		list := &workv1alpha1.ResourceBindingList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(namespace)); err != nil {
			return err
		}
		bound := map[string]bool{}
		for _, b := range list.Items {
			bound[b.Name] = true
		}
		missing := 0
		for _, name := range names {
			if !bound[workv1alpha1.BindingName(configMapKind, name)] {
				missing++
			}
		}
		if missing > 0 {
			return fmt.Errorf("%d of %d have no binding", missing, len(names))
		}
		return nil
	})
}

// refuseBindings makes the API server refuse every binding in namespace: a template there cannot be claimed.
func refuseBindings(t *testing.T, namespace string) {
	t.Helper()
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "no-bindings"},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/resourcebindings.work.flotilla.io": resource.MustParse("0")}}}
	create(t, quota)
	// Admission checks against the quota's status, which the hub's quota controller writes.
	testenv.Eventually(t, hangGuard, "the quota refuses bindings", func() error {
		b := &workv1alpha1.ResourceBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "probe"},
			Spec: workv1alpha1.ResourceBindingSpec{Resource: workv1alpha1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "probe"}}}
		if err := env.Client.Create(context.Background(), b, client.DryRunAll); !apierrors.IsForbidden(err) {
			return fmt.Errorf("a binding is not refused: %v", err)
		}
		return nil
	})
}

// TestPolicyTakesTemplatesCreatedBeforeIt: a policy created after its templates claims every one of them,
// and so does a policy whose selector is widened, even when one template in between cannot be claimed.
func TestPolicyTakesTemplatesCreatedBeforeIt(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "claim-all")
	createNamespace(t, "claim-refused")
	refuseBindings(t, "claim-refused")
	create(t, configMap("claim-refused", "refused", map[string]string{"batch": "first"}))
	var first, second []string
	for i := range 50 {
		first = append(first, fmt.Sprintf("first-%d", i))
		create(t, configMap("claim-all", first[i], map[string]string{"batch": "first"}))
	}
	policy := clusterPolicy("claim-all", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap",
		LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "batch", Operator: metav1.LabelSelectorOpIn, Values: []string{"first"}}}}})
	conflicts := bindingCreateConflicts(t)
	create(t, policy)
	waitBindings(t, "claim-all", first)
	// Each binding is written once, by server-side apply, however far the detector's cache lags in the burst:
	// no create fails because an earlier pass made the binding already.
	if n := bindingCreateConflicts(t) - conflicts; n != 0 {
		t.Errorf("%v binding creates failed with AlreadyExists", n)
	}
	testenv.Eventually(t, hangGuard, "every binding written once, each field by its one writer", func() error {
		list := &workv1alpha1.ResourceBindingList{}
		if err := env.Client.List(ctx, list, client.InNamespace("claim-all")); err != nil {
			return err
		}
		for i := range list.Items {
			if b := &list.Items[i]; b.Generation != 1 {
				return fmt.Errorf("binding %s: spec written %d times", b.Name, b.Generation)
			} else if err := bindingWriters(b, false); err != nil {
				return err
			}
		}
		return nil
	})

	// The kind is watched by now: the templates the widened selector takes come from the policy pass alone.
	for i := range 50 {
		second = append(second, fmt.Sprintf("second-%d", i))
		create(t, configMap("claim-all", second[i], map[string]string{"batch": "second"}))
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
			return err
		}
		policy.Spec.ResourceSelectors[0].LabelSelector.MatchExpressions[0].Values = []string{"first", "second"}
		return env.Client.Update(ctx, policy)
	}); err != nil {
		t.Fatal(err)
	}
	waitBindings(t, "claim-all", append(first, second...))
	if _, err := binding(ctx, configMapKind, "claim-refused", "refused"); !apierrors.IsNotFound(err) {
		t.Fatalf("the refused template's binding: %v", err)
	}
}

// TestLongTemplateNamesAreBound: a template whose name fills the 253 characters an object name may have
// still gets a binding, under a shortened name that can also be the label value its Works carry.
func TestLongTemplateNamesAreBound(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "long-names")
	name := strings.Repeat("a", 240) + ".long-name"
	create(t, configMap("long-names", name, nil))
	create(t, namespacedPolicy("long-names", "all", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "ConfigMap"}))
	testenv.Eventually(t, hangGuard, "the long-named template's binding", func() error {
		b, err := binding(ctx, configMapKind, "long-names", name)
		if err != nil {
			return err
		}
		if b.Spec.Resource.Name != name || len(b.Name) > 63 {
			return fmt.Errorf("binding %s for %s", b.Name, b.Spec.Resource.Name)
		}
		return nil
	})
}

// TestSystemObjectsStayOnTheHub: a ClusterPropagationPolicy that selects every Secret (and Flotilla's own
// kinds) claims ordinary Secrets only: no push credential, nothing of a cluster namespace, no bootstrap
// token, nothing of kube-system unless a selector names it.
func TestSystemObjectsStayOnTheHub(t *testing.T) {
	ctx := context.Background()
	token, err := registration.CreateToken(ctx, env.Kube, time.Hour, "detector test", registration.Grant{})
	if err != nil {
		t.Fatal(err)
	}
	tokenSecret := "bootstrap-token-" + token.ID
	createNamespace(t, "flotilla-cluster-system-test")
	createNamespace(t, "system-ordinary")
	secret := func(namespace, name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, StringData: map[string]string{"k": "v"}}
	}
	create(t, secret(clusterv1alpha1.SystemNamespace, "system-test-credential"))
	create(t, secret("flotilla-cluster-system-test", "system-test"))
	create(t, secret(metav1.NamespaceSystem, "system-test-opt-in"))
	create(t, secret(metav1.NamespacePublic, "system-test-public"))
	create(t, &policyv1alpha1.ClusterOverridePolicy{ObjectMeta: metav1.ObjectMeta{Name: "system-test"}})
	var ordinary []string
	for i := range 5 {
		ordinary = append(ordinary, fmt.Sprintf("ordinary-%d", i))
		create(t, secret("system-ordinary", ordinary[i]))
	}
	passes, templates := reconciles(t, "detector-policies"), reconciles(t, "detector")
	create(t, clusterPolicy("every-secret", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Secret"},
		policyv1alpha1.ResourceSelector{APIVersion: "policy.flotilla.io/v1alpha1", Kind: "ClusterOverridePolicy"}))
	create(t, clusterPolicy("kube-system-secrets", policyv1alpha1.ResourceSelector{APIVersion: "v1", Kind: "Secret", Namespace: metav1.NamespaceSystem}))

	secretKind := schema.GroupKind{Kind: "Secret"}
	testenv.Eventually(t, hangGuard, "bindings of the ordinary Secrets and of the one named by namespace", func() error {
		for _, name := range ordinary {
			if _, err := binding(ctx, secretKind, "system-ordinary", name); err != nil {
				return err
			}
		}
		_, err := binding(ctx, secretKind, metav1.NamespaceSystem, "system-test-opt-in")
		return err
	})
	// The policy pass handed every Secret of the hub to the template reconciler, the system ones with the
	// ordinary ones (ten made here): once it went through them all, a binding of a system object would be here.
	waitReconciled(t, "detector-policies", passes, 1)
	waitReconciled(t, "detector", templates, len(ordinary)+5)
	for _, s := range []struct{ namespace, name string }{
		{metav1.NamespaceSystem, tokenSecret}, {clusterv1alpha1.SystemNamespace, "system-test-credential"},
		{"flotilla-cluster-system-test", "system-test"}, {metav1.NamespacePublic, "system-test-public"},
	} {
		if _, err := binding(ctx, secretKind, s.namespace, s.name); !apierrors.IsNotFound(err) {
			t.Fatalf("Secret %s/%s has a binding (%v)", s.namespace, s.name, err)
		}
	}
	crb := &workv1alpha1.ClusterResourceBinding{}
	name := workv1alpha1.BindingName(schema.GroupKind{Group: "policy.flotilla.io", Kind: "ClusterOverridePolicy"}, "system-test")
	if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, crb); !apierrors.IsNotFound(err) {
		t.Fatalf("a ClusterOverridePolicy has a binding (%v)", err)
	}
}

// widgetCRD defines namespaced kind Widget of group in two versions, v1 and v2, served side by side.
func widgetCRD(group, kind string) *apiextensionsv1.CustomResourceDefinition {
	plural := strings.ToLower(kind) + "s"
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
		Type: "object", XPreserveUnknownFields: ptrTo(true)}}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Kind: kind, ListKind: kind + "List", Singular: strings.ToLower(kind)},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema},
				{Name: "v2", Served: true, Schema: schema},
			},
		},
	}
}

func ptrTo[T any](v T) *T { return &v }

// createCRD creates a CRD and waits until it is served.
func createCRD(t *testing.T, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	create(t, crd)
	testenv.Eventually(t, hangGuard, "CRD "+crd.Name+" established", func() error {
		got := &apiextensionsv1.CustomResourceDefinition{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(crd), got); err != nil {
			return err
		}
		for _, c := range got.Status.Conditions {
			if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
				return nil
			}
		}
		return errors.New("not established")
	})
}

func customObject(apiVersion, kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(1)}}}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// TestOneTemplateUnderTwoVersions: an object its CRD serves as v1 and v2, selected by one policy under each
// version, is one template: one claim that stays put and one binding.
func TestOneTemplateUnderTwoVersions(t *testing.T) {
	ctx := context.Background()
	const group = "versions.detector.example.io"
	createCRD(t, widgetCRD(group, "Widget"))
	createNamespace(t, "two-versions")
	create(t, customObject(group+"/v1", "Widget", "two-versions", "w"))
	passes, templates := reconciles(t, "detector-policies"), reconciles(t, "detector")
	create(t, namespacedPolicy("two-versions", "by-v1", policyv1alpha1.ResourceSelector{APIVersion: group + "/v1", Kind: "Widget"}))
	create(t, clusterPolicy("by-v2", policyv1alpha1.ResourceSelector{APIVersion: group + "/v2", Kind: "Widget", Namespace: "two-versions"}))

	widget := schema.GroupKind{Group: group, Kind: "Widget"}
	claimedByV1 := func() error {
		w := customObject(group+"/v1", "Widget", "two-versions", "w")
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(w), w); err != nil {
			return err
		}
		if l := w.GetLabels(); l[policyv1alpha1.LabelPropagationPolicyName] != "by-v1" || l[policyv1alpha1.LabelClusterPropagationPolicy] != "" {
			return fmt.Errorf("claim labels %v, want the PropagationPolicy by-v1", l)
		}
		if _, err := binding(ctx, widget, "two-versions", "w"); err != nil {
			return err
		}
		bindings := &workv1alpha1.ResourceBindingList{}
		if err := env.Client.List(ctx, bindings, client.InNamespace("two-versions")); err != nil {
			return err
		}
		if len(bindings.Items) != 1 {
			return fmt.Errorf("%d bindings", len(bindings.Items))
		}
		return nil
	}
	testenv.Eventually(t, hangGuard, "the namespaced policy claims the widget", claimedByV1)
	// The claim stays: once the detector has nothing left to do, the two versions have not taken it from
	// each other (a detector that did would never rest, or rest with the other claim).
	waitReconciled(t, "detector-policies", passes, 1)
	waitReconciled(t, "detector", templates, 1)
	if err := claimedByV1(); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseAfterReplaceDroppedTheClaim: a `kubectl replace` that drops the claim labels and makes the
// template unselected releases it: its binding goes.
func TestReleaseAfterReplaceDroppedTheClaim(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "replaced")
	cm := configMap("replaced", "web", map[string]string{"app": "web"})
	create(t, cm)
	create(t, namespacedPolicy("replaced", "web", labelled("v1", "ConfigMap", map[string]string{"app": "web"})))
	testenv.Eventually(t, hangGuard, "the binding", func() error {
		_, err := binding(ctx, configMapKind, "replaced", "web")
		return err
	})
	// What kubectl replace sends: the manifest as written, without the labels the detector added.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			return err
		}
		cm.Labels = map[string]string{"app": "other"}
		return env.Client.Update(ctx, cm)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, hangGuard, "the binding released", func() error {
		if b, err := binding(ctx, configMapKind, "replaced", "web"); !apierrors.IsNotFound(err) {
			return fmt.Errorf("binding still there (%v): %v", err, b.Annotations)
		}
		return nil
	})
}

// TestPolicyBeforeItsCRD: a policy that selects a kind before its CRD exists takes effect once the CRD is
// served, without a restart of the hub.
func TestPolicyBeforeItsCRD(t *testing.T) {
	ctx := context.Background()
	const group = "late.detector.example.io"
	gadgets := clusterPolicy("gadgets", policyv1alpha1.ResourceSelector{APIVersion: group + "/v1", Kind: "Gadget"})
	create(t, gadgets)
	testenv.Eventually(t, hangGuard, "the policy looked at while the kind does not exist", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(gadgets), gadgets); err != nil {
			return err
		}
		c := meta.FindStatusCondition(gadgets.Status.Conditions, policyv1alpha1.ConditionHonoured)
		if c == nil || c.Reason != detector.ReasonKindNotServed || c.ObservedGeneration != gadgets.Generation {
			return fmt.Errorf("conditions %+v at generation %d", gadgets.Status.Conditions, gadgets.Generation)
		}
		return nil
	})
	createCRD(t, widgetCRD(group, "Gadget"))
	createNamespace(t, "late-kind")
	create(t, customObject(group+"/v1", "Gadget", "late-kind", "g"))
	// Less than the detector's fallback retry (30s): the CRD's arrival must be what wakes the policy.
	testenv.Eventually(t, 20*time.Second, "the gadget's binding", func() error {
		_, err := binding(ctx, schema.GroupKind{Group: group, Kind: "Gadget"}, "late-kind", "g")
		return err
	})
}

// bindingCreateConflicts is how many binding creates the hub has refused with 409 (AlreadyExists).
func bindingCreateConflicts(t *testing.T) float64 {
	return bindingRequests(t, `verb="POST"`, `code="409"`)
}

// bindingRequests sums the hub's apiserver_request_total over the ResourceBinding requests whose labels
// include every one of labels (for example `verb="APPLY"`).
func bindingRequests(t *testing.T, labels ...string) float64 {
	t.Helper()
	body, err := env.Kube.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var total float64
lines:
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || !strings.Contains(line, `resource="resourcebindings"`) {
			continue
		}
		for _, l := range labels {
			if !strings.Contains(line, l) {
				continue lines
			}
		}
		var n float64
		if _, err := fmt.Sscan(line[strings.LastIndex(line, " ")+1:], &n); err != nil {
			t.Fatalf("reading %q: %v", line, err)
		}
		total += n
	}
	return total
}

// TestPolicyChangeLeavesDerivedBindingsAlone: a policy change that does not change what a binding derives
// from it writes no binding, even when its template changed in ways the binding does not reflect (here its
// status). The binding used to record the template's resourceVersion, so nearly every policy change
// rewrote nearly every binding.
func TestPolicyChangeLeavesDerivedBindingsAlone(t *testing.T) {
	ctx := context.Background()
	createNamespace(t, "derived")
	deployment := func(name string) *appsv1.Deployment {
		labels := map[string]string{"app": name}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "derived", Name: name},
			Spec: appsv1.DeploymentSpec{Replicas: ptrTo(int32(3)), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "web", Image: "nginx", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}}}}}}}}
	}
	web, witness := deployment("web"), deployment("witness")
	create(t, web)
	create(t, witness)
	policy := namespacedPolicy("derived", "web", policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"})
	create(t, policy)
	deploymentKind := schema.GroupKind{Group: "apps", Kind: "Deployment"}
	testenv.Eventually(t, hangGuard, "web's binding", func() error {
		b, err := binding(ctx, deploymentKind, "derived", "web")
		if err == nil && (b.Spec.Replicas != 3 || b.Spec.ReplicaRequirements == nil) {
			err = fmt.Errorf("binding spec %+v", b.Spec)
		}
		return err
	})
	// What the status aggregation (or a member's report) does to a template: a new resourceVersion, nothing
	// a binding derives.
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(web), web); err != nil {
			return err
		}
		web.Status.ObservedGeneration, web.Status.Replicas = web.Generation, 3
		return env.Client.Status().Update(ctx, web)
	}); err != nil {
		t.Fatal(err)
	}
	var before *workv1alpha1.ResourceBinding
	stableSince := time.Now()
	testenv.Eventually(t, hangGuard, "web's binding settles", func() error {
		b, err := binding(ctx, deploymentKind, "derived", "web")
		if err != nil {
			return err
		}
		if before == nil || before.ResourceVersion != b.ResourceVersion {
			before, stableSince = b, time.Now()
		}
		if time.Since(stableSince) < 2*time.Second {
			return errors.New("written less than 2s ago")
		}
		return nil
	})

	// The policy now also takes the witness: its pass hands web and the witness to the template reconciler.
	passes, templates := reconciles(t, "detector-policies"), reconciles(t, "detector")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
			return err
		}
		policy.Spec.ResourceSelectors = append(policy.Spec.ResourceSelectors[:1],
			policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "witness"})
		return env.Client.Update(ctx, policy)
	}); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, hangGuard, "the witness's binding", func() error {
		_, err := binding(ctx, deploymentKind, "derived", "witness")
		return err
	})
	// The negative assertion, once the pass and both templates' reconciles are done: web's wrote nothing.
	waitReconciled(t, "detector-policies", passes, 1)
	waitReconciled(t, "detector", templates, 2)
	after, err := binding(ctx, deploymentKind, "derived", "web")
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || after.Generation != before.Generation {
		t.Fatalf("the policy change rewrote web's binding: resourceVersion %s → %s, generation %d → %d",
			before.ResourceVersion, after.ResourceVersion, before.Generation, after.Generation)
	}

	// Not even a request that changes nothing: with both bindings up to date in the cache, another policy
	// change sends no apply at all.
	applies := bindingRequests(t, `verb="APPLY"`, `subresource=""`)
	if applies == 0 {
		t.Fatal("the hub counts no binding applies, not even those that made web's and the witness's bindings")
	}
	passes, templates = reconciles(t, "detector-policies"), reconciles(t, "detector")
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(policy), policy); err != nil {
			return err
		}
		policy.Spec.ResourceSelectors = append(policy.Spec.ResourceSelectors[:2],
			policyv1alpha1.ResourceSelector{APIVersion: "apps/v1", Kind: "Deployment", Name: "not-there"})
		return env.Client.Update(ctx, policy)
	}); err != nil {
		t.Fatal(err)
	}
	// The negative assertion again, once the pass and both templates' reconciles are done.
	waitReconciled(t, "detector-policies", passes, 1)
	waitReconciled(t, "detector", templates, 2)
	if n := bindingRequests(t, `verb="APPLY"`, `subresource=""`) - applies; n != 0 {
		t.Fatalf("a policy change that changes no binding sent %v binding applies", n)
	}
}
