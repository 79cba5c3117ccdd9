package mirror

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	ocmaddonv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/addon/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// TestTemplateManifests: an OCM template's manifests as Flotilla installs them: the Namespace they were in
// dropped, namespaced objects moved to the install namespace (their role binding subjects following), the
// agent's pods given the built-in variables as environment and the hub credential mounted where
// {{HUB_KUBECONFIG}} points; without registration, no credential.
func TestTemplateManifests(t *testing.T) {
	manifests := []string{
		"{apiVersion: v1, kind: Namespace, metadata: {name: open-cluster-management-agent-addon}}",
		"{apiVersion: v1, kind: ServiceAccount, metadata: {name: agent, namespace: open-cluster-management-agent-addon}}",
		"{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: agent}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}, subjects: [{kind: ServiceAccount, name: agent, namespace: open-cluster-management-agent-addon}, {kind: User, name: someone}]}",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: agent, namespace: open-cluster-management-agent-addon}, spec: {template: {spec: {containers: [{name: a, image: agent, args: ["--hub-kubeconfig={{HUB_KUBECONFIG}}", "--cluster={{CLUSTER_NAME}}"], env: [{name: CLUSTER_NAME, value: mine}, {name: LOG_LEVEL, value: "{{LOG_LEVEL}}"}]}]}}}}`,
	}
	want := []string{
		"{apiVersion: v1, kind: ServiceAccount, metadata: {name: agent}}",
		"{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRoleBinding, metadata: {name: agent}, roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}, subjects: [{kind: ServiceAccount, name: agent, namespace: '{{INSTALL_NAMESPACE}}'}, {kind: User, name: someone}]}",
		`{apiVersion: apps/v1, kind: Deployment, metadata: {name: agent}, spec: {template: {spec: {
		   containers: [{name: a, image: agent, args: ["--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig", "--cluster={{CLUSTER_NAME}}"],
		     env: [{name: LOG_LEVEL, value: "{{LOG_LEVEL}}"}, {name: CLUSTER_NAME, value: "{{CLUSTER_NAME}}"}, {name: INSTALL_NAMESPACE, value: "{{INSTALL_NAMESPACE}}"}, {name: HUB_KUBECONFIG, value: /managed/hub-kubeconfig/kubeconfig}],
		     volumeMounts: [{name: hub-kubeconfig, mountPath: /managed/hub-kubeconfig, readOnly: true}]}],
		   volumes: [{name: hub-kubeconfig, secret: {secretName: hello-hub-kubeconfig}}]}}}}`,
	}
	template := &ocmaddonv1alpha1.AddOnTemplate{Spec: ocmaddonv1alpha1.AddOnTemplateSpec{AddonName: "hello",
		Registration: []ocmaddonv1alpha1.RegistrationSpec{{Type: "KubeClient", KubeClient: &ocmaddonv1alpha1.KubeClientRegistrationConfig{}}}}}
	for _, m := range manifests {
		template.Spec.AgentSpec.Workload.Manifests = append(template.Spec.AgentSpec.Workload.Manifests, workv1alpha1.Manifest{RawExtension: raw(t, m)})
	}
	got, err := templateManifests("hello", template)
	if err != nil {
		t.Fatal(err)
	}
	expectManifests(t, got, want)

	// Without registration: the variables, no credential.
	template.Spec.Registration = nil
	template.Spec.AgentSpec.Workload.Manifests = []workv1alpha1.Manifest{{RawExtension: raw(t, "{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent}, spec: {template: {spec: {containers: [{name: a, image: agent}]}}}}")}}
	got, err = templateManifests("hello", template)
	if err != nil {
		t.Fatal(err)
	}
	expectManifests(t, got, []string{`{apiVersion: apps/v1, kind: DaemonSet, metadata: {name: agent}, spec: {template: {spec: {containers: [{name: a, image: agent,
		env: [{name: CLUSTER_NAME, value: "{{CLUSTER_NAME}}"}, {name: INSTALL_NAMESPACE, value: "{{INSTALL_NAMESPACE}}"}]}]}}}}`})
}

func raw(t *testing.T, doc string) runtime.RawExtension {
	t.Helper()
	data, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return runtime.RawExtension{Raw: data}
}

func expectManifests(t *testing.T, got []workv1alpha1.Manifest, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d manifests, want %d", len(got), len(want))
	}
	for i := range want {
		var g, w any
		if err := json.Unmarshal(got[i].Raw, &g); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw(t, want[i]).Raw, &w); err != nil {
			t.Fatal(err)
		}
		if !equality.Semantic.DeepEqual(g, w) {
			t.Errorf("manifest %d:\ngot  %s\nwant %s", i, got[i].Raw, raw(t, want[i]).Raw)
		}
	}
}

// TestRolloutStrategy: OCM's rollout strategies as Flotilla's; a progressDeadline of None is none.
func TestRolloutStrategy(t *testing.T) {
	for _, tt := range []struct {
		name string
		in   *ocmaddonv1alpha1.RolloutStrategy
		want *policyv1alpha1.RolloutStrategy
	}{
		{"none", nil, nil},
		{"all", &ocmaddonv1alpha1.RolloutStrategy{Type: "All"}, &policyv1alpha1.RolloutStrategy{Type: "All"}},
		{"progressive", &ocmaddonv1alpha1.RolloutStrategy{Type: "Progressive", Progressive: &ocmaddonv1alpha1.RolloutProgressive{
			RolloutConfig:           ocmaddonv1alpha1.RolloutConfig{MinSuccessTime: metav1.Duration{Duration: time.Minute}, ProgressDeadline: "10m", MaxFailures: ptr.To(intstr.FromString("10%"))},
			MandatoryDecisionGroups: []ocmaddonv1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}},
			MaxConcurrency:          ptr.To(intstr.FromInt32(2))}},
			&policyv1alpha1.RolloutStrategy{Type: "Progressive", Progressive: &policyv1alpha1.ProgressiveRollout{
				MandatoryDecisionGroups: []policyv1alpha1.MandatoryDecisionGroup{{GroupName: "canary"}}, MaxConcurrency: ptr.To(intstr.FromInt32(2)),
				MinSuccessTime: metav1.Duration{Duration: time.Minute}, ProgressDeadline: &metav1.Duration{Duration: 10 * time.Minute}, MaxFailures: ptr.To(intstr.FromString("10%"))}}},
		{"per group, no deadline", &ocmaddonv1alpha1.RolloutStrategy{Type: "ProgressivePerGroup", ProgressivePerGroup: &ocmaddonv1alpha1.RolloutProgressivePerGroup{
			RolloutConfig: ocmaddonv1alpha1.RolloutConfig{ProgressDeadline: "None"}}},
			&policyv1alpha1.RolloutStrategy{Type: "ProgressivePerGroup", Progressive: &policyv1alpha1.ProgressiveRollout{}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := rolloutStrategy(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestManagedClusterAddOnStatus: a ClusterAddOn's status in OCM's words.
func TestManagedClusterAddOnStatus(t *testing.T) {
	conditions := []metav1.Condition{{Type: addonv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: "Healthy"}}
	in := &addonv1alpha1.ClusterAddOnStatus{Namespace: "ns", Conditions: conditions,
		Registrations:    []addonv1alpha1.RegistrationStatus{{User: "u", Groups: []string{"g"}, SecretName: "s"}},
		ConfigReferences: []addonv1alpha1.ConfigStatus{{ConfigReference: addonv1alpha1.ConfigReference{Group: "addon.flotilla.io", Resource: "addonconfigs", ConfigName: addonv1alpha1.ConfigName{Name: "c", Namespace: "n"}}, SpecHash: "h"}},
		HealthCheck:      addonv1alpha1.HealthCheck{Mode: addonv1alpha1.HealthWork}}
	hash := &ocmaddonv1alpha1.ConfigSpecHash{ConfigReferent: ocmaddonv1alpha1.ConfigReferent{Name: "c", Namespace: "n"}, SpecHash: "h"}
	want := &ocmaddonv1alpha1.ManagedClusterAddOnStatus{Namespace: "ns", Conditions: conditions,
		Registrations: []ocmaddonv1alpha1.RegistrationConfig{{SignerName: "kubernetes.io/kube-apiserver-client", Subject: ocmaddonv1alpha1.Subject{User: "u", Groups: []string{"g"}}}},
		ConfigReferences: []ocmaddonv1alpha1.ConfigReference{{
			ConfigGroupResource: ocmaddonv1alpha1.ConfigGroupResource{Group: "addon.open-cluster-management.io", Resource: "addondeploymentconfigs"},
			ConfigReferent:      hash.ConfigReferent, DesiredConfig: hash, LastAppliedConfig: hash}},
		HealthCheck: ocmaddonv1alpha1.HealthCheck{Mode: "Customized"}}
	if got := managedClusterAddOnStatus(in); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

// TestClusterManagementAddOnStatus: per placement being rolled out, the AddOn's Progressing condition.
func TestClusterManagementAddOnStatus(t *testing.T) {
	progressing := metav1.Condition{Type: addonv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: "Rolling"}
	in := &addonv1alpha1.AddOnStatus{Conditions: []metav1.Condition{{Type: "Degraded", Status: metav1.ConditionFalse}, progressing},
		Rollouts: []addonv1alpha1.PlacementRollout{{ConfigName: addonv1alpha1.ConfigName{Name: "p", Namespace: "n"}}}}
	want := &ocmaddonv1alpha1.ClusterManagementAddOnStatus{InstallProgressions: []ocmaddonv1alpha1.InstallProgression{
		{PlacementRef: ocmaddonv1alpha1.PlacementRef{Name: "p", Namespace: "n"}, Conditions: []metav1.Condition{progressing}}}}
	if got := clusterManagementAddOnStatus(in); !equality.Semantic.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
	if got := clusterManagementAddOnStatus(&addonv1alpha1.AddOnStatus{}); len(got.InstallProgressions) != 0 {
		t.Errorf("no rollouts: got %+v", got)
	}
}
