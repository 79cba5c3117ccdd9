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
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/scheme"
	"github.com/flotilla-io/flotilla/internal/testenv"
)

// TestAddOnCredentialInPushMember: an add-on with registration, enabled by hand on the push member m3 (the
// pull members get theirs from their agents in TestAddOnExampleOnTheFleet), gets its agent's hub credential
// as a Secret in its install namespace in m3, requested and written by the hub; the credential writes a
// ConfigMap in m3's namespace on the hub and is Forbidden in m2's; disabling the add-on deletes the Secret.
func TestAddOnCredentialInPushMember(t *testing.T) {
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
	ns := clusterv1alpha1.ClusterNamespace(f.m3.Name)
	enabled := &addonv1alpha1.ClusterAddOn{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	for _, o := range []client.Object{role, addon, enabled} {
		if err := f.hub.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = f.hub.Client.Delete(context.Background(), o) })
	}
	install := addonv1alpha1.DefaultInstallNamespace(name)
	var secret *corev1.Secret
	testenv.Eventually(t, 2*time.Minute, "the credential Secret in m3's install namespace", func() (err error) {
		secret, err = f.m3.Kube.CoreV1().Secrets(install).Get(ctx, addonv1alpha1.CredentialSecretName(name), metav1.GetOptions{})
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
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: clusterv1alpha1.ClusterNamespace(f.m2.Name)}}
	if err := addOnAgent.Create(ctx, other); !apierrors.IsForbidden(err) {
		t.Errorf("the add-on credential of m3 writes in m2's namespace: %v, want Forbidden", err)
	}

	if err := f.hub.Client.Delete(ctx, enabled); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 2*time.Minute, "the disabled add-on's credential Secret deleted", func() error {
		_, err := f.m3.Kube.CoreV1().Secrets(install).Get(ctx, addonv1alpha1.CredentialSecretName(name), metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("credential Secret: %v, want NotFound", err)
		}
		return nil
	})
	testenv.Eventually(t, time.Minute, "the disabled add-on's credential Forbidden in m3's namespace", func() error {
		if err := addOnAgent.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns)); !apierrors.IsForbidden(err) {
			return fmt.Errorf("listing ConfigMaps: %v, want Forbidden", err)
		}
		return nil
	})
}
