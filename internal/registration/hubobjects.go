package registration

import (
	"context"
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// EnsureHubObjects publishes what agents need before they have an identity: the hub's CA and address in
// kube-public/flotilla-cluster-info, readable anonymously (and by agents, which read the hub's ID there,
// ids.go), and the right for Flotilla bootstrap tokens (and for agents, to renew) to file
// CertificateSigningRequests and read them back by name. They may not list or watch them: other requesters'
// requests are none of their business.
func EnsureHubObjects(ctx context.Context, c client.Client, hubURL string, caPEM []byte, hubID string) error {
	info := clientcmdapi.NewConfig()
	info.Clusters[""] = &clientcmdapi.Cluster{Server: hubURL, CertificateAuthorityData: caPEM}
	kubeconfig, err := clientcmd.Write(*info)
	if err != nil {
		return err
	}
	objs := []client.Object{
		&corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: ClusterInfoName, Namespace: ClusterInfoNamespace},
			Data:       map[string]string{"kubeconfig": string(kubeconfig), ClusterInfoHubID: hubID},
		},
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: "flotilla:cluster-info-reader", Namespace: ClusterInfoNamespace},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"},
				ResourceNames: []string{ClusterInfoName}, Verbs: []string{"get"}}},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "flotilla:cluster-info-reader", Namespace: ClusterInfoNamespace},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "flotilla:cluster-info-reader"},
			Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:anonymous"},
				{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: AgentGroup}},
		},
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: "flotilla:csr-requester"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{certificatesv1.GroupName}, Resources: []string{"certificatesigningrequests"},
				Verbs: []string{"create", "get"}}},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "flotilla:csr-requester"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "flotilla:csr-requester"},
			Subjects: []rbacv1.Subject{
				{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: BootstrapGroup},
				{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: AgentGroup},
			},
		},
	}
	for _, o := range objs {
		if err := apply(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// fieldManager owns what registration applies: the agents' RBAC, the hub's registration roles and Push
// clusters' credentials.
var fieldManager = workv1alpha1.ControllerFieldManager("registration")

// apply server-side applies an object as registration.
func apply(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Patch(ctx, obj, client.Apply, client.FieldOwner(fieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
