package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
	"github.com/flotilla-io/flotilla/test/e2e/framework"
)

// TestAddOnCredentialInMembers: an add-on with registration, enabled on a pull member (m1) and a push member
// (m3), gets its agent's hub credential as a Secret in its install namespace of each member, kept by m1's agent
// and by the hub; the credential writes a ConfigMap in its cluster's namespace on the hub; disabling the add-on
// deletes the Secret. The add-on's status and bindings are written here as the add-on controllers write them.
func TestAddOnCredentialInMembers(t *testing.T) {
	ctx := context.Background()
	f := useFleet(t)
	name := f.ns // unique to this test on the shared fleet
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create"}}}}
	addon := &addonv1alpha1.AddOn{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: addonv1alpha1.AddOnSpec{
		Template: addonv1alpha1.AddOnTemplate{Manifests: []workv1alpha1.Manifest{{RawExtension: runtime.RawExtension{
			Raw: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"addon-e2e"}}`)}}}},
		Registration: &addonv1alpha1.Registration{HubPermissions: []addonv1alpha1.HubPermission{{Type: addonv1alpha1.PermissionCurrentCluster,
			CurrentCluster: &addonv1alpha1.CurrentClusterPermission{ClusterRoleName: name}}}},
	}}
	for _, o := range []client.Object{role, addon} {
		if err := f.hub.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.hub.Client.Delete(context.Background(), o) })
	}
	install := addonv1alpha1.DefaultInstallNamespace(name)
	for _, member := range []*framework.Cluster{f.m1, f.m3} {
		t.Run(member.Name, func(t *testing.T) {
			ns := clusterv1alpha1.ClusterNamespace(member.Name)
			binding := &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "addon-" + name, Namespace: ns},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
				Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: addonv1alpha1.AgentUser(name, member.Name)}},
			}
			if err := f.hub.Client.Create(ctx, binding); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = f.hub.Client.Delete(context.Background(), binding) })
			if _, err := member.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: install}}, metav1.CreateOptions{}); err != nil &&
				!apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = member.Kube.CoreV1().Namespaces().Delete(context.Background(), install, metav1.DeleteOptions{})
			})
			enabled := &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{addonv1alpha1.LabelAddOn: name}}}
			if err := f.hub.Client.Create(ctx, enabled); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = f.hub.Client.Delete(context.Background(), enabled) })
			err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
				if err := f.hub.Client.Get(ctx, client.ObjectKeyFromObject(enabled), enabled); err != nil {
					return err
				}
				enabled.Status.Namespace = install
				enabled.Status.Registrations = []addonv1alpha1.RegistrationStatus{{User: addonv1alpha1.AgentUser(name, member.Name),
					Groups: []string{addonv1alpha1.AgentGroup(name)}, SecretName: addonv1alpha1.CredentialSecretName(name)}}
				return f.hub.Client.Status().Update(ctx, enabled)
			})
			if err != nil {
				t.Fatal(err)
			}

			var secret *corev1.Secret
			testenv.Eventually(t, 2*time.Minute, "the credential Secret in the member's install namespace", func() (err error) {
				secret, err = member.Kube.CoreV1().Secrets(install).Get(ctx, addonv1alpha1.CredentialSecretName(name), metav1.GetOptions{})
				return err
			})
			cfg, err := clientcmd.RESTConfigFromKubeConfig(secret.Data[addonv1alpha1.CredentialSecretKey])
			if err != nil {
				t.Fatal(err)
			}
			addOnAgent, err := client.New(cfg, client.Options{Scheme: scheme.New()})
			if err != nil {
				t.Fatal(err)
			}
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
			if err := addOnAgent.Create(ctx, cm); err != nil {
				t.Fatalf("the add-on credential cannot write a ConfigMap in its cluster's namespace: %v", err)
			}
			t.Cleanup(func() { _ = f.hub.Client.Delete(context.Background(), cm) })
			other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterv1alpha1.ClusterNamespace("m2")}}
			if err := addOnAgent.Create(ctx, other); !apierrors.IsForbidden(err) {
				t.Errorf("the add-on credential of %s writes in m2's namespace: %v, want Forbidden", member.Name, err)
			}

			if err := f.hub.Client.Delete(ctx, enabled); err != nil {
				t.Fatal(err)
			}
			testenv.Eventually(t, 2*time.Minute, "the disabled add-on's credential Secret deleted", func() error {
				_, err := member.Kube.CoreV1().Secrets(install).Get(ctx, addonv1alpha1.CredentialSecretName(name), metav1.GetOptions{})
				if !apierrors.IsNotFound(err) {
					return fmt.Errorf("credential Secret: %v, want NotFound", err)
				}
				return nil
			})
		})
	}
}
