package existingcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	autoscalingv1alpha1 "github.com/flotilla-io/flotilla/api/autoscaling/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	configv1alpha1 "github.com/flotilla-io/flotilla/api/config/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/controlplane"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// deniedByWebhook is how an API server introduces a webhook's refusal.
var deniedByWebhook = regexp.MustCompile(`^admission webhook "[a-z.]+" denied the request: `)

// TestChecksRunOverExistingCluster: what the embedded hub's API server refuses in process (a policy whose
// statePreservation jsonPath does not parse, a customization whose Lua script does not parse, a quota that
// assigns one cluster more than overall, a Deployment over its namespace's quota), a hub over an
// existing cluster refuses at admission too, through the webhook it serves, with the same message after the
// API server's naming of the webhook. With no hub serving, those kinds are refused rather than let through
// unchecked.
func TestChecksRunOverExistingCluster(t *testing.T) {
	ctx := context.Background()
	embedded := startEmbeddedHub(t)
	adopting := startAdoptingHub(t)

	selectors := []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}}
	badPolicy := &policyv1alpha1.PropagationPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-state", Namespace: metav1.NamespaceDefault},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: selectors, Failover: &policyv1alpha1.FailoverBehavior{
			Application: &policyv1alpha1.ApplicationFailoverBehavior{StatePreservation: &policyv1alpha1.StatePreservation{
				Rules: []policyv1alpha1.StatePreservationRule{{AliasLabelName: "checkpoint", JSONPath: "{.checkpoint"}},
			}},
		}},
	}
	badCustomization := &configv1alpha1.InterpreterCustomization{
		ObjectMeta: metav1.ObjectMeta{Name: "bad-lua"},
		Spec: configv1alpha1.InterpreterCustomizationSpec{
			Target: configv1alpha1.CustomizationTarget{APIVersion: "example.io/v1", Kind: "Widget"},
			Customizations: configv1alpha1.CustomizationRules{HealthInterpretation: &configv1alpha1.Expression{
				LuaScript: "function InterpretHealth(observedObj)\n  return observedObj.status. >= 1\nend\n",
			}},
		},
	}
	webRef := autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	tests := []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"policy whose statePreservation jsonPath does not parse", badPolicy,
			[]string{"spec.failover.application.statePreservation.rules[0].jsonPath", "not a JSONPath client-go can read"}},
		{"customization whose Lua script does not parse", badCustomization,
			[]string{"spec.customizations.healthInterpretation.luaScript", "luaScript line:2"}},
		{"quota whose static assignment exceeds overall", quotaOf(metav1.NamespaceDefault, "bad-quota", "2", "3"),
			[]string{"spec.staticAssignments[0].hard[cpu]", "cluster member1 may not have more cpu than the overall 2"}},
		{"federatedhpa whose minReplicas is above maxReplicas", &autoscalingv1alpha1.FederatedHPA{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-bounds", Namespace: metav1.NamespaceDefault},
			Spec:       autoscalingv1alpha1.FederatedHPASpec{ScaleTargetRef: webRef, MinReplicas: ptr.To[int32](5), MaxReplicas: 3}},
			[]string{"spec.minReplicas", "must not be greater than maxReplicas (3)"}},
		{"cronfederatedhpa in an unknown time zone", &autoscalingv1alpha1.CronFederatedHPA{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-zone", Namespace: metav1.NamespaceDefault},
			Spec: autoscalingv1alpha1.CronFederatedHPASpec{ScaleTargetRef: webRef, Rules: []autoscalingv1alpha1.CronFederatedHPARule{
				{Name: "r", Schedule: "0 8 * * *", TimeZone: ptr.To("Mars/Olympus"), TargetReplicas: ptr.To[int32](2)}}}},
			[]string{"spec.rules[0].timeZone", `unknown time zone "Mars/Olympus"`}},
		{"addon whose agent would be granted a role in a cluster's namespace", &addonv1alpha1.AddOn{
			ObjectMeta: metav1.ObjectMeta{Name: "bad-grant"},
			Spec: addonv1alpha1.AddOnSpec{
				Template: addonv1alpha1.AddOnTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{
					Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)}}}},
				Registration: &addonv1alpha1.Registration{HubPermissions: []addonv1alpha1.HubPermission{{Type: addonv1alpha1.PermissionSingleNamespace,
					SingleNamespace: &addonv1alpha1.SingleNamespacePermission{Namespace: "flotilla-cluster-east", RoleRef: addonv1alpha1.RoleRef{Kind: "Role", Name: "r"}}}}},
			}},
			[]string{"spec.registration.hubPermissions[0].singleNamespace.namespace", "a cluster's namespace"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inProcess := embedded.Client.Create(ctx, tt.obj.DeepCopyObject().(client.Object), client.DryRunAll)
			if !apierrors.IsInvalid(inProcess) {
				t.Fatalf("the embedded hub does not refuse it as invalid: %v", inProcess)
			}
			webhook := env.Client.Create(ctx, tt.obj.DeepCopyObject().(client.Object), client.DryRunAll)
			if !apierrors.IsInvalid(webhook) {
				t.Fatalf("the hub over an existing cluster does not refuse it as invalid: %v", webhook)
			}
			prefix := deniedByWebhook.FindString(webhook.Error())
			if prefix == "" || strings.TrimPrefix(webhook.Error(), prefix) != inProcess.Error() {
				t.Fatalf("the refusals differ:\n existing cluster: %v\n embedded hub:     %v", webhook, inProcess)
			}
			for _, want := range tt.want {
				if !strings.Contains(webhook.Error(), want) {
					t.Errorf("the refusal does not name %q: %v", want, webhook)
				}
			}
		})
	}

	// A workload over its namespace's fleet-wide quota, created or scaled, is refused by both alike.
	for _, hub := range []client.Client{embedded.Client, env.Client} {
		q := quotaOf(metav1.NamespaceDefault, "quota", "2", "1")
		if err := hub.Create(ctx, q); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { // its finalizer is the controller's, gone with the hub
			_ = hub.Patch(ctx, q, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			_ = hub.Delete(ctx, q)
		})
	}
	over := func(c client.Client) error {
		return c.Create(ctx, deployment(metav1.NamespaceDefault, "web", 3, "1"), client.DryRunAll)
	}
	inProcess, webhook := over(embedded.Client), over(env.Client)
	if !apierrors.IsForbidden(inProcess) || !apierrors.IsForbidden(webhook) {
		t.Fatalf("a Deployment over the quota is not refused by both:\n existing cluster: %v\n embedded hub:     %v", webhook, inProcess)
	}
	if prefix := deniedByWebhook.FindString(webhook.Error()); prefix == "" || strings.TrimPrefix(webhook.Error(), prefix) != inProcess.Error() ||
		!strings.Contains(inProcess.Error(), "exceeds FederatedResourceQuota default/quota: cpu: requested 3, used 0, overall 2 (2 left)") {
		t.Fatalf("the refusals differ or say something else:\n existing cluster: %v\n embedded hub:     %v", webhook, inProcess)
	}

	good := badPolicy.DeepCopy()
	good.Spec.Failover.Application.StatePreservation.Rules[0].JSONPath = "{.checkpoint}"
	if err := env.Client.Create(ctx, good.DeepCopy(), client.DryRunAll); err != nil {
		t.Fatalf("a policy whose jsonPath parses is refused: %v", err)
	}
	warnsThroughWebhook(t)
	adopting.Kill()
	testenv.Eventually(t, time.Minute, "a policy is refused while no hub serves the checks", func() error {
		err := env.Client.Create(ctx, good.DeepCopy(), client.DryRunAll)
		if err == nil {
			return errors.New("accepted unchecked")
		}
		if !strings.Contains(err.Error(), "failed calling webhook") {
			t.Fatalf("refused for another reason: %v", err)
		}
		return nil
	})
}

// quotaOf is a FederatedResourceQuota of overall cpu with one static assignment of hard cpu to member1.
func quotaOf(namespace, name, overall, hard string) *policyv1alpha1.FederatedResourceQuota {
	return &policyv1alpha1.FederatedResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: policyv1alpha1.FederatedResourceQuotaSpec{Overall: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(overall)},
			StaticAssignments: []policyv1alpha1.StaticClusterAssignment{{ClusterName: "member1", Hard: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(hard)}}}}}
}

// deployment is a Deployment of replicas pods that each request cpu.
func deployment(namespace, name string, replicas int32, cpu string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "nginx", Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}}}}}}
}

// startEmbeddedHub runs an embedded hub (`flotilla hub --data-dir`) as a child process, to compare with.
func startEmbeddedHub(t *testing.T) *testenv.Env {
	t.Helper()
	ports, err := controlplane.FreePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	dataDir := filepath.Join(t.TempDir(), "embedded")
	p := testenv.StartProcess(t, "embedded-hub", "hub", "--data-dir", dataDir, "--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(ports[0]), "--dashboard=false")
	kubeconfig := filepath.Join(dataDir, "admin.kubeconfig")
	testenv.Eventually(t, 2*time.Minute, "the embedded hub is ready", func() error {
		if p.Exited() {
			t.Fatalf("the embedded hub exited:\n%s", p.Output())
		}
		if !strings.Contains(p.Output(), "hub ready") {
			return errors.New("not ready yet")
		}
		_, err := os.Stat(kubeconfig)
		return err
	})
	return testenv.Connect(t, kubeconfig)
}

// warningText collects the warnings the API server returns.
type warningText []string

func (w *warningText) HandleWarningHeader(_ int, _ string, text string) { *w = append(*w, text) }

// warnsThroughWebhook: the webhook warns, as the embedded hub does, about a policy naming a cluster that its
// namespace's ClusterSetBindings do not grant, reading them from the cluster.
func warnsThroughWebhook(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "grant-team"}},
		&clusterv1alpha1.ClusterSet{ObjectMeta: metav1.ObjectMeta{Name: "grant-prod"}},
		&clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "grant-team", Name: "grant-prod"},
			Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: "grant-prod"}},
		&clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: "grant-outside"}, Spec: clusterv1alpha1.ClusterSpec{SyncMode: clusterv1alpha1.Pull}},
	}
	for _, o := range objs {
		if err := env.Client.Create(ctx, o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	w := &warningText{}
	cfg := rest.CopyConfig(env.Config)
	cfg.WarningHandler = w
	c, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	pp := &policyv1alpha1.PropagationPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "grant-team", Name: "web"},
		Spec: policyv1alpha1.PropagationSpec{ResourceSelectors: []policyv1alpha1.ResourceSelector{{APIVersion: "apps/v1", Kind: "Deployment"}},
			Placement: policyv1alpha1.Placement{ClusterAffinity: &policyv1alpha1.ClusterAffinity{ClusterNames: []string{"grant-outside"}}}}}
	if err := c.Create(ctx, pp, client.DryRunAll); err != nil {
		t.Fatalf("refused: %v", err)
	}
	want := "grant-outside is in no ClusterSet bound to namespace grant-team"
	if !strings.Contains(strings.Join(*w, "\n"), want) {
		t.Fatalf("warnings %q, want one saying %q", *w, want)
	}
}
