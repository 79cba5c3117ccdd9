package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	policyv1alpha1 "github.com/flotilla-io/flotilla/api/policy/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestAddOnAdmission: every add-on field the hub could not run as written is refused when written, with a
// message that names the field and the rule.
func TestAddOnAdmission(t *testing.T) {
	const clusterNS = "flotilla-cluster-ao-admission"
	createNamespace(t, clusterNS)
	good := func(edit func(a *addonv1alpha1.AddOn)) client.Object {
		a := newAddOn("ao-admission", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
		withDefaultConfig(a, "default", "base")
		edit(a)
		return a
	}
	placements := func(p addonv1alpha1.PlacementStrategy) func(a *addonv1alpha1.AddOn) {
		return func(a *addonv1alpha1.AddOn) {
			a.Spec.InstallStrategy = addonv1alpha1.InstallStrategy{Type: addonv1alpha1.InstallPlacements, Placements: []addonv1alpha1.PlacementStrategy{p}}
		}
	}
	single := func(ns string) func(a *addonv1alpha1.AddOn) {
		return func(a *addonv1alpha1.AddOn) {
			a.Spec.Registration = &addonv1alpha1.Registration{HubPermissions: []addonv1alpha1.HubPermission{{Type: addonv1alpha1.PermissionSingleNamespace,
				SingleNamespace: &addonv1alpha1.SingleNamespacePermission{Namespace: ns, RoleRef: addonv1alpha1.RoleRef{Kind: "Role", Name: "r"}}}}}
		}
	}
	orphan := clusterAddOn("ao-admission", "ao-no-such-addon")
	outside := clusterAddOn("x", "ao-admission")
	outside.Namespace = "default"
	tests := []struct {
		name string
		obj  client.Object
		want []string
	}{
		{"a config kind other than AddOnConfig", good(func(a *addonv1alpha1.AddOn) { a.Spec.SupportedConfigs[0].Resource = "configmaps" }),
			[]string{"spec.supportedConfigs[0]", "Unsupported value", "addonconfigs.addon.flotilla.io"}},
		{"a placement config of a kind the add-on does not take", good(placements(addonv1alpha1.PlacementStrategy{Namespace: "default", Name: "p",
			Configs: []addonv1alpha1.ConfigReference{{Group: "example.io", Resource: "things", ConfigName: addonv1alpha1.ConfigName{Namespace: "default", Name: "c"}}}})),
			[]string{"spec.installStrategy.placements[0].configs[0]", "does not take this kind of config"}},
		{"a rollout maxConcurrency over 100%", good(placements(addonv1alpha1.PlacementStrategy{Namespace: "default", Name: "p",
			RolloutStrategy: &policyv1alpha1.RolloutStrategy{Type: policyv1alpha1.RolloutProgressive,
				Progressive: &policyv1alpha1.ProgressiveRollout{MaxConcurrency: ptr.To(intstr.FromString("150%"))}}})),
			[]string{"spec.installStrategy.placements[0].rolloutStrategy.progressive.maxConcurrency", "neither a count nor a percentage"}},
		{"installStrategy Placements without placements", good(func(a *addonv1alpha1.AddOn) {
			a.Spec.InstallStrategy.Type = addonv1alpha1.InstallPlacements
		}), []string{"installStrategy Placements needs at least one placement"}},
		{"a SingleNamespace permission in a cluster's namespace", good(single("flotilla-cluster-east")),
			[]string{"spec.registration.hubPermissions[0].singleNamespace.namespace", "a cluster's namespace"}},
		{"health by Lease without registration", good(func(a *addonv1alpha1.AddOn) { a.Spec.HealthCheck.Mode = addonv1alpha1.HealthLease }),
			[]string{"spec.healthCheck.mode", "health by Lease needs spec.registration"}},
		{"a lease duration of zero", good(func(a *addonv1alpha1.AddOn) { a.Spec.HealthCheck.LeaseDuration = &metav1.Duration{} }),
			[]string{"spec.healthCheck.leaseDuration", "must be positive"}},
		{"a manifest without a name", good(func(a *addonv1alpha1.AddOn) {
			a.Spec.Template.Manifests[0].Raw = []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"labels":{"a":"b"}}}`)
		}), []string{"spec.template.manifests[0].metadata.name", "every manifest names its object"}},
		{"a customized variable the hub fills", &addonv1alpha1.AddOnConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "x"},
			Spec: addonv1alpha1.AddOnConfigSpec{CustomizedVariables: []addonv1alpha1.CustomizedVariable{{Name: "CLUSTER_NAME", Value: "x"}}}},
			[]string{"spec.customizedVariables[0].name", "the hub fills this variable itself"}},
		{"a ClusterAddOn outside a cluster's namespace", outside, []string{"metadata.namespace", "lives in the namespace of the cluster"}},
		{"a ClusterAddOn that names no AddOn", orphan, []string{"metadata.name", "there is no AddOn ao-no-such-addon"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := env.Client.Create(context.Background(), tt.obj, client.DryRunAll)
			if err == nil {
				t.Fatalf("accepted %+v", tt.obj)
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not mention %q:\n%v", want, err)
				}
			}
		})
	}
}

// TestAddOnHubPermissionsNeedBind: a user who may write AddOns but not bind a role cannot grant it to an
// add-on's agents (the hub's controllers would write the binding for them); once allowed to bind that role
// they can, and the administrator can.
func TestAddOnHubPermissionsNeedBind(t *testing.T) {
	ctx := context.Background()
	const user = "ao-author"
	author := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ao-author"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{addonv1alpha1.GroupVersion.Group}, Resources: []string{"addons"}, Verbs: []string{"*"}}}}
	create(t, author)
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "ao-author"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: author.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	c, err := client.New(cfg, client.Options{Scheme: scheme.New()})
	if err != nil {
		t.Fatal(err)
	}
	withPermission := func(role string) *addonv1alpha1.AddOn {
		a := newAddOn("ao-escalation", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`)
		a.Spec.Registration = &addonv1alpha1.Registration{HubPermissions: []addonv1alpha1.HubPermission{{Type: addonv1alpha1.PermissionCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterPermission{ClusterRoleName: role}}}}
		return a
	}
	testenv.Eventually(t, time.Minute, "the author refused by the bind rule", func() error {
		err := c.Create(ctx, withPermission("cluster-admin"), client.DryRunAll)
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "granting ClusterRole cluster-admin to the add-on's agents needs the bind verb") {
			return fmt.Errorf("got %v", err)
		}
		return nil
	})
	binder := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "ao-author-binds-view"}, Rules: []rbacv1.PolicyRule{{
		APIGroups: []string{rbacv1.GroupName}, Resources: []string{"clusterroles"}, ResourceNames: []string{"view"}, Verbs: []string{"bind"}}}}
	create(t, binder)
	create(t, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: binder.Name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: binder.Name},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}})
	testenv.Eventually(t, time.Minute, "the author grants view", func() error { return c.Create(ctx, withPermission("view"), client.DryRunAll) })
	if err := c.Create(ctx, withPermission("cluster-admin"), client.DryRunAll); !apierrors.IsForbidden(err) {
		t.Fatalf("the author granted cluster-admin: %v, want Forbidden", err)
	}
	if err := env.Client.Create(ctx, withPermission("cluster-admin"), client.DryRunAll); err != nil {
		t.Fatalf("the administrator may not grant cluster-admin: %v", err)
	}
}
