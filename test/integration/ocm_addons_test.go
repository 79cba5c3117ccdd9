package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	ocmaddonv1alpha1 "github.com/flotilla-io/flotilla/api/ocm/addon/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/mirror"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// ocmHelloAddOn is a template add-on as OCM documents one, unchanged but for its names: its template, its
// ClusterManagementAddOn, a deployment config, and its ManagedClusterAddOn in the namespace named after the
// cluster (ocm-apis-1).
const ocmHelloAddOn = `apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnTemplate
metadata:
  name: hello-template
spec:
  addonName: hello-template
  agentSpec:
    workload:
      manifests:
        - kind: Deployment
          apiVersion: apps/v1
          metadata:
            name: hello-template-agent
            namespace: open-cluster-management-agent-addon
            labels:
              app: hello-template-agent
          spec:
            replicas: 1
            selector:
              matchLabels:
                app: hello-template-agent
            template:
              metadata:
                labels:
                  app: hello-template-agent
              spec:
                serviceAccountName: hello-template-agent-sa
                containers:
                  - name: helloworld-agent
                    image: quay.io/open-cluster-management/addon-examples:v1
                    args:
                      - "/helloworld_helm"
                      - "agent"
                      - "--cluster-name={{CLUSTER_NAME}}"
                      - "--hub-kubeconfig={{HUB_KUBECONFIG}}"
                    env:
                      - name: LOG_LEVEL
                        value: "{{LOG_LEVEL}}"
        - kind: ServiceAccount
          apiVersion: v1
          metadata:
            name: hello-template-agent-sa
            namespace: open-cluster-management-agent-addon
        - kind: ClusterRoleBinding
          apiVersion: rbac.authorization.k8s.io/v1
          metadata:
            name: hello-template-agent
          roleRef:
            apiGroup: rbac.authorization.k8s.io
            kind: ClusterRole
            name: cluster-admin
          subjects:
            - kind: ServiceAccount
              name: hello-template-agent-sa
              namespace: open-cluster-management-agent-addon
  registration:
    - type: KubeClient
      kubeClient:
        hubPermissions:
          - type: CurrentCluster
            currentCluster:
              clusterRoleName: cm-admin
          - type: SingleNamespace
            singleNamespace:
              namespace: ocm-apis-config
              roleRef:
                apiGroup: rbac.authorization.k8s.io
                kind: Role
                name: reader
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ClusterManagementAddOn
metadata:
  name: hello-template
  annotations:
    addon.open-cluster-management.io/lifecycle: addon-manager
spec:
  addOnMeta:
    description: hello-template is an addon built with addon template
    displayName: hello-template
  supportedConfigs:
    - group: addon.open-cluster-management.io
      resource: addontemplates
      defaultConfig:
        name: hello-template
    - group: addon.open-cluster-management.io
      resource: addondeploymentconfigs
      defaultConfig:
        name: hello-config
        namespace: ocm-apis-config
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: AddOnDeploymentConfig
metadata:
  name: hello-config
  namespace: ocm-apis-config
spec:
  customizedVariables:
    - name: LOG_LEVEL
      value: "4"
  registries:
    - source: quay.io/open-cluster-management
      mirror: registry.example.com/ocm
  nodePlacement:
    nodeSelector:
      role: addons
    tolerations:
      - key: dedicated
        operator: Equal
        value: addons
        effect: NoSchedule
---
apiVersion: addon.open-cluster-management.io/v1alpha1
kind: ManagedClusterAddOn
metadata:
  name: hello-template
  namespace: ocm-apis-1
spec:
  installNamespace: hello-agent
  configs:
    - group: addon.open-cluster-management.io
      resource: addondeploymentconfigs
      name: hello-config-1
      namespace: ocm-apis-config
`

// TestOCMAddOnsServed: an OCM template add-on applied unchanged in addon.open-cluster-management.io gets its
// Flotilla twins: the ClusterManagementAddOn and its AddOnTemplate one AddOn (metadata, configs, the template
// made to run as OCM runs it, the registration's permissions), owned by the ClusterManagementAddOn; the
// AddOnDeploymentConfig an AddOnConfig; the ManagedClusterAddOn, in the namespace named after its cluster,
// the ClusterAddOn in the cluster's Flotilla namespace, marked as its and held by its finalizer. A change of
// the template reaches the AddOn; the ClusterAddOn's status shows on the ManagedClusterAddOn in OCM's words;
// what Flotilla cannot run is refused when written or said in an event; deleting each OCM object deletes its
// twin.
func TestOCMAddOnsServed(t *testing.T) {
	ctx := context.Background()
	createPullCluster(t, "ocm-apis-1")
	createNamespace(t, "ocm-apis-1")
	createNamespace(t, "ocm-apis-config")

	var peers []*unstructured.Unstructured
	for _, doc := range strings.Split(ocmHelloAddOn, "\n---\n") {
		obj := parseObject(t, doc)
		if err := env.Client.Create(ctx, obj); err != nil {
			t.Fatalf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), obj) })
		peers = append(peers, obj)
	}
	template, cma, adc, mca := peers[0], peers[1], peers[2], peers[3]

	// The AddOn.
	addon := &addonv1alpha1.AddOn{}
	testenv.Eventually(t, 30*time.Second, "the AddOn of hello-template", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Name: "hello-template"}, addon)
	})
	if !metav1.IsControlledBy(addon, cma) {
		t.Errorf("the AddOn is not owned by the ClusterManagementAddOn: %v", addon.OwnerReferences)
	}
	s := addon.Spec
	if s.DisplayName != "hello-template" || !strings.HasPrefix(s.Description, "hello-template is an addon") ||
		s.InstallNamespace != ocmaddonv1alpha1.DefaultAgentNamespace || s.InstallStrategy.Type != addonv1alpha1.InstallManual {
		t.Errorf("the AddOn's metadata and strategy are not the ClusterManagementAddOn's: %+v", s)
	}
	wantConfigs := []addonv1alpha1.ConfigMeta{{Group: addonv1alpha1.GroupVersion.Group, Resource: "addonconfigs",
		DefaultConfig: &addonv1alpha1.ConfigName{Name: "hello-config", Namespace: "ocm-apis-config"}}}
	if !equality.Semantic.DeepEqual(s.SupportedConfigs, wantConfigs) {
		t.Errorf("supportedConfigs: got %+v, want %+v", s.SupportedConfigs, wantConfigs)
	}
	wantRegistration := &addonv1alpha1.Registration{HubPermissions: []addonv1alpha1.HubPermission{
		{Type: addonv1alpha1.PermissionCurrentCluster, CurrentCluster: &addonv1alpha1.CurrentClusterPermission{ClusterRoleName: "cm-admin"}},
		{Type: addonv1alpha1.PermissionSingleNamespace, SingleNamespace: &addonv1alpha1.SingleNamespacePermission{Namespace: "ocm-apis-config",
			RoleRef: addonv1alpha1.RoleRef{Kind: "Role", Name: "reader"}}}}}
	if !equality.Semantic.DeepEqual(s.Registration, wantRegistration) {
		t.Errorf("registration: got %+v, want %+v", s.Registration, wantRegistration)
	}
	if len(s.Template.Manifests) != 3 {
		t.Fatalf("the AddOn has %d manifests, want the template's 3", len(s.Template.Manifests))
	}
	deployment := string(s.Template.Manifests[0].Raw)
	for _, want := range []string{`"--hub-kubeconfig=/managed/hub-kubeconfig/kubeconfig"`, `"--cluster-name={{CLUSTER_NAME}}"`,
		`"secretName":"hello-template-hub-kubeconfig"`, `"mountPath":"/managed/hub-kubeconfig"`, `"value":"{{LOG_LEVEL}}"`} {
		if !strings.Contains(deployment, want) {
			t.Errorf("the AddOn's Deployment lacks %s: %s", want, deployment)
		}
	}
	if strings.Contains(deployment, ocmaddonv1alpha1.DefaultAgentNamespace) {
		t.Errorf("the AddOn's Deployment keeps its namespace instead of going to the install namespace: %s", deployment)
	}

	// The AddOnConfig.
	config := &addonv1alpha1.AddOnConfig{}
	testenv.Eventually(t, 30*time.Second, "the AddOnConfig of hello-config", func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: "ocm-apis-config", Name: "hello-config"}, config)
	})
	if !metav1.IsControlledBy(config, adc) {
		t.Errorf("the AddOnConfig is not owned by the AddOnDeploymentConfig: %v", config.OwnerReferences)
	}
	if c := config.Spec; len(c.CustomizedVariables) != 1 || c.CustomizedVariables[0] != (addonv1alpha1.CustomizedVariable{Name: "LOG_LEVEL", Value: "4"}) ||
		len(c.Registries) != 1 || c.Registries[0].Mirror != "registry.example.com/ocm" || c.NodePlacement == nil ||
		c.NodePlacement.NodeSelector["role"] != "addons" || len(c.NodePlacement.Tolerations) != 1 {
		t.Errorf("the AddOnConfig is not the AddOnDeploymentConfig: %+v", c)
	}

	// The ClusterAddOn, in the cluster's Flotilla namespace.
	twinKey := client.ObjectKey{Namespace: clusterv1alpha1.ClusterNamespace("ocm-apis-1"), Name: "hello-template"}
	clusterAddOn := &addonv1alpha1.ClusterAddOn{}
	testenv.Eventually(t, 30*time.Second, "the ClusterAddOn of hello-template on ocm-apis-1", func() error {
		return env.Client.Get(ctx, twinKey, clusterAddOn)
	})
	if got := clusterAddOn.Annotations[mirror.AnnotationPeer]; got != "addon.open-cluster-management.io/ManagedClusterAddOn/ocm-apis-1/hello-template" {
		t.Errorf("the ClusterAddOn is not marked as the ManagedClusterAddOn's: %q", got)
	}
	if clusterAddOn.Labels[addonv1alpha1.LabelAddOn] != "hello-template" {
		t.Errorf("the ClusterAddOn has no %s label: %v", addonv1alpha1.LabelAddOn, clusterAddOn.Labels)
	}
	wantRefs := []addonv1alpha1.ConfigReference{{Group: addonv1alpha1.GroupVersion.Group, Resource: "addonconfigs",
		ConfigName: addonv1alpha1.ConfigName{Name: "hello-config-1", Namespace: "ocm-apis-config"}}}
	if clusterAddOn.Spec.InstallNamespace != "hello-agent" || !equality.Semantic.DeepEqual(clusterAddOn.Spec.Configs, wantRefs) {
		t.Errorf("the ClusterAddOn's spec is not the ManagedClusterAddOn's: %+v", clusterAddOn.Spec)
	}
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(mca), mca); err != nil || !controllerutil.ContainsFinalizer(mca, mirror.Finalizer) {
		t.Errorf("the ManagedClusterAddOn does not hold %s: %v %v", mirror.Finalizer, err, mca.GetFinalizers())
	}

	// A change of the template reaches the AddOn.
	testenv.Eventually(t, 30*time.Second, "the template's change", func() error {
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(template), template); err != nil {
			return err
		}
		manifests, _, _ := unstructured.NestedSlice(template.Object, "spec", "agentSpec", "workload", "manifests")
		if len(manifests) == 3 {
			manifests = append(manifests, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "hello-extra"}})
			if err := unstructured.SetNestedSlice(template.Object, manifests, "spec", "agentSpec", "workload", "manifests"); err != nil {
				return err
			}
			if err := env.Client.Update(ctx, template); err != nil {
				return err
			}
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(addon), addon); err != nil {
			return err
		}
		if n := len(addon.Spec.Template.Manifests); n != 4 {
			return fmt.Errorf("the AddOn has %d manifests", n)
		}
		return nil
	})

	// The ClusterAddOn's status shows on the ManagedClusterAddOn, in OCM's words.
	testenv.Eventually(t, 30*time.Second, "the ClusterAddOn's status written", func() error {
		if err := env.Client.Get(ctx, twinKey, clusterAddOn); err != nil {
			return err
		}
		clusterAddOn.Status.Namespace = "hello-agent"
		clusterAddOn.Status.HealthCheck.Mode = addonv1alpha1.HealthWork
		clusterAddOn.Status.Registrations = []addonv1alpha1.RegistrationStatus{{User: addonv1alpha1.AgentUser("hello-template", "ocm-apis-1"),
			Groups: []string{addonv1alpha1.AgentGroup("hello-template")}, SecretName: addonv1alpha1.CredentialSecretName("hello-template")}}
		clusterAddOn.Status.Conditions = []metav1.Condition{{Type: addonv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue,
			Reason: "Healthy", Message: "written by the test", LastTransitionTime: metav1.Now()}}
		return env.Client.Status().Update(ctx, clusterAddOn)
	})
	testenv.Eventually(t, 30*time.Second, "the ClusterAddOn's status on the ManagedClusterAddOn", func() error {
		if err := env.Client.Get(ctx, twinKey, clusterAddOn); err != nil {
			return err
		}
		if len(clusterAddOn.Status.Conditions) == 0 {
			return fmt.Errorf("the ClusterAddOn has no conditions")
		}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(mca), mca); err != nil {
			return err
		}
		got := &ocmaddonv1alpha1.ManagedClusterAddOnStatus{}
		status, _, _ := unstructured.NestedMap(mca.Object, "status")
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(status, got); err != nil {
			return err
		}
		// What the twin says (the hub's add-on controllers may have written it since), as OCM says it.
		want := &ocmaddonv1alpha1.ManagedClusterAddOnStatus{Conditions: clusterAddOn.Status.Conditions, Namespace: clusterAddOn.Status.Namespace}
		for _, r := range clusterAddOn.Status.Registrations {
			want.Registrations = append(want.Registrations, ocmaddonv1alpha1.RegistrationConfig{SignerName: "kubernetes.io/kube-apiserver-client",
				Subject: ocmaddonv1alpha1.Subject{User: r.User, Groups: r.Groups}})
		}
		if got.Namespace != want.Namespace || !equality.Semantic.DeepEqual(got.Registrations, want.Registrations) ||
			len(got.Conditions) != len(want.Conditions) || got.Conditions[0].Message != want.Conditions[0].Message {
			gotJSON, _ := json.Marshal(got)
			return fmt.Errorf("status %s", gotJSON)
		}
		if mode := map[addonv1alpha1.HealthCheckMode]string{addonv1alpha1.HealthWork: "Customized", addonv1alpha1.HealthLease: "Lease"}[clusterAddOn.Status.HealthCheck.Mode]; got.HealthCheck.Mode != mode {
			return fmt.Errorf("health check mode %q, want %q", got.HealthCheck.Mode, mode)
		}
		return nil
	})

	// Refused when written: what Flotilla cannot run.
	for what, doc := range map[string]string{
		"a variable name in lower case": "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: lower, namespace: ocm-apis-config}\nspec:\n  customizedVariables: [{name: logLevel, value: '4'}]\n",
		"a CustomSigner registration":   "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnTemplate\nmetadata: {name: signer}\nspec:\n  addonName: signer\n  agentSpec: {workload: {manifests: [{apiVersion: v1, kind: ConfigMap, metadata: {name: x}}]}}\n  registration: [{type: CustomSigner}]\n",
		"a variable the hub fills":      "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: builtin, namespace: ocm-apis-config}\nspec:\n  customizedVariables: [{name: CLUSTER_NAME, value: other}]\n",
		"a config without a namespace":  "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ManagedClusterAddOn\nmetadata: {name: nons, namespace: ocm-apis-1}\nspec:\n  configs: [{group: addon.open-cluster-management.io, resource: addondeploymentconfigs, name: c}]\n",
		"proxyConfig":                   "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: AddOnDeploymentConfig\nmetadata: {name: proxy, namespace: ocm-apis-config}\nspec:\n  proxyConfig: {httpProxy: 'http://proxy'}\n",
	} {
		err := env.Client.Create(ctx, parseObject(t, doc), client.DryRunAll, client.FieldValidation("Strict"))
		if err == nil {
			t.Errorf("%s: want it refused when written", what)
		}
	}
	// Said in an event: an add-on that is not a template add-on.
	notTemplate := parseObject(t, "apiVersion: addon.open-cluster-management.io/v1alpha1\nkind: ClusterManagementAddOn\nmetadata: {name: ocm-apis-managed}\nspec:\n  supportedConfigs: [{group: example.io, resource: widgets}]\n")
	if err := env.Client.Create(ctx, notTemplate); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), notTemplate) })
	testenv.Eventually(t, 30*time.Second, "an event saying the add-on is not mirrored", func() error {
		events, err := env.Kube.EventsV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for _, e := range events.Items {
			if e.Reason == mirror.ReasonMirrorFailed && e.Regarding.Name == "ocm-apis-managed" && strings.Contains(e.Note, "widgets.example.io is not served") {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(events.Items))
	})

	// Deleting each OCM object deletes its twin.
	for _, tt := range []struct {
		peer *unstructured.Unstructured
		twin client.Object
		key  client.ObjectKey
	}{
		{mca, &addonv1alpha1.ClusterAddOn{}, twinKey},
		{cma, &addonv1alpha1.AddOn{}, client.ObjectKey{Name: "hello-template"}},
		{adc, &addonv1alpha1.AddOnConfig{}, client.ObjectKey{Namespace: "ocm-apis-config", Name: "hello-config"}},
	} {
		if err := env.Client.Delete(ctx, tt.peer); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, time.Minute, "the twin deleted with "+tt.peer.GetKind(), func() error {
			if err := env.Client.Get(ctx, tt.key, tt.twin); !apierrors.IsNotFound(err) {
				return fmt.Errorf("still there: %v", err)
			}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(tt.peer), tt.peer.DeepCopy()); !apierrors.IsNotFound(err) {
				return fmt.Errorf("the %s is still there: %v", tt.peer.GetKind(), err)
			}
			return nil
		})
	}
}
