package hub

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/flotilla-io/flotilla/internal/scheme"
)

// The embedded hub's user-facing servers (the proxy behind the aggregator, the dashboard on its own port)
// ask the hub who their callers are and what they may do, and the dashboard reads the hub as each caller.
// They do it as a user of their own rather than as the admin: the admin is in system:masters, which API
// Priority and Fairness exempts, so reviews and reads that any user can cause would jump every queue.
const (
	// FrontUser is the front servers' user: a client certificate from the hub CA, in no group.
	FrontUser = "system:flotilla:front"
	// FrontRole names the ClusterRole and its binding to FrontUser.
	FrontRole = "system:flotilla:front"
	// authenticationReader is kube-apiserver's Role, in kube-system, that lets a delegating server read how
	// the hub authenticates (extension-apiserver-authentication).
	authenticationReader = "extension-apiserver-authentication-reader"
)

// frontRBAC grants the front user what delegation needs, TokenReviews and SubjectAccessReviews, and the
// impersonation of any user the dashboard reads the hub as. (Impersonation is as strong as the user
// impersonated; the dashboard impersonates only the user the hub authenticated.)
func frontRBAC() []client.Object {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: FrontRole},
		Rules: []rbacv1.PolicyRule{
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
			{APIGroups: []string{""}, Resources: []string{"users", "groups", "serviceaccounts"}, Verbs: []string{"impersonate"}},
			// uids, and userextras/KEY for every key (RBAC has no userextras/* pattern).
			{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"*"}, Verbs: []string{"impersonate"}},
		},
	}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: FrontUser}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: FrontRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: FrontRole},
		Subjects:   subjects,
	}
	reader := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: FrontRole, Namespace: metav1.NamespaceSystem},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: authenticationReader},
		Subjects:   subjects,
	}
	return []client.Object{role, binding, reader}
}

// installFrontIdentity writes (or restores) the front user's RBAC, and its kubeconfig for the delegating
// servers; it returns that kubeconfig's path and the configuration the dashboard reads the hub with.
func (h *Hub) installFrontIdentity(ctx context.Context) (string, *rest.Config, error) {
	c, err := client.New(h.Config, client.Options{Scheme: scheme.New()})
	if err != nil {
		return "", nil, err
	}
	for _, want := range frontRBAC() {
		obj := want.DeepCopyObject().(client.Object)
		if _, err := controllerutil.CreateOrUpdate(ctx, c, obj, func() error { return restore(obj, want) }); err != nil {
			return "", nil, fmt.Errorf("front identity: %T %s: %w", obj, obj.GetName(), err)
		}
	}
	path, err := h.controlPlane.WriteClientKubeconfig("front.kubeconfig", FrontUser)
	if err != nil {
		return "", nil, fmt.Errorf("front identity: %w", err)
	}
	cfg, err := h.controlPlane.ClientConfig(FrontUser)
	if err != nil {
		return "", nil, fmt.Errorf("front identity: %w", err)
	}
	cfg.QPS, cfg.Burst = h.Config.QPS, h.Config.Burst
	return path, cfg, nil
}

// restore sets the rules, role reference and subjects of an RBAC object back to want's.
func restore(obj, want client.Object) error {
	switch o := obj.(type) {
	case *rbacv1.ClusterRole:
		o.Rules = want.(*rbacv1.ClusterRole).Rules
	case *rbacv1.ClusterRoleBinding:
		o.RoleRef, o.Subjects = want.(*rbacv1.ClusterRoleBinding).RoleRef, want.(*rbacv1.ClusterRoleBinding).Subjects
	case *rbacv1.RoleBinding:
		o.RoleRef, o.Subjects = want.(*rbacv1.RoleBinding).RoleRef, want.(*rbacv1.RoleBinding).Subjects
	default:
		return fmt.Errorf("not an RBAC object: %T", obj)
	}
	return nil
}
