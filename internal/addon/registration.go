package addon

import (
	"context"
	"fmt"
	"hash/fnv"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// LabelCluster names, on the RBAC the hub writes for an add-on's agent, the cluster whose agent it is for.
const LabelCluster = "addon.flotilla.io/cluster"

// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=rolebindings;roles,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;clusterroles,verbs=bind
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch

// grants are the Roles and RoleBindings an add-on's agent on one cluster gets on the hub: one RoleBinding
// per hub permission (in the cluster's namespace for CurrentCluster, in the named namespace for
// SingleNamespace) and, with health mode Lease, a Role and RoleBinding on its Lease in the cluster's
// namespace. All carry LabelAddOn and LabelCluster, so what is no longer wanted is found and deleted.
func grants(a *addonv1alpha1.AddOn, cluster string) ([]*rbacv1.Role, []*rbacv1.RoleBinding) {
	user := addonv1alpha1.AgentUser(a.Name, cluster)
	labels := map[string]string{addonv1alpha1.LabelAddOn: a.Name, LabelCluster: cluster}
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	ns := clusterv1alpha1.ClusterNamespace(cluster)
	binding := func(namespace string, ref rbacv1.RoleRef) *rbacv1.RoleBinding {
		h := fnv.New32a()
		h.Write([]byte(ref.Kind + "/" + ref.Name))
		return &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("flotilla:addon:%s:%s:%08x", a.Name, cluster, h.Sum32()), Labels: labels},
			RoleRef:    ref, Subjects: subjects,
		}
	}
	var roles []*rbacv1.Role
	var bindings []*rbacv1.RoleBinding
	if a.Spec.Registration != nil {
		for _, p := range a.Spec.Registration.HubPermissions {
			switch {
			case p.Type == addonv1alpha1.PermissionCurrentCluster && p.CurrentCluster != nil:
				bindings = append(bindings, binding(ns, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: p.CurrentCluster.ClusterRoleName}))
			case p.Type == addonv1alpha1.PermissionSingleNamespace && p.SingleNamespace != nil:
				bindings = append(bindings, binding(p.SingleNamespace.Namespace,
					rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: p.SingleNamespace.RoleRef.Kind, Name: p.SingleNamespace.RoleRef.Name}))
			}
		}
	}
	if a.Spec.HealthCheck.Mode == addonv1alpha1.HealthLease {
		lease := addonv1alpha1.LeaseName(a.Name)
		role := &rbacv1.Role{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "flotilla:addon:" + a.Name + ":lease", Labels: labels},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{lease}, Verbs: []string{"get", "update", "patch"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
			},
		}
		roles = append(roles, role)
		bindings = append(bindings, binding(ns, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name}))
	}
	return roles, bindings
}

// applyGrants brings the hub RBAC of an add-on's agent on a cluster to what the AddOn says: it writes what
// is missing or differs and deletes what carries the add-on's and cluster's labels and is no longer wanted.
// With want empty it deletes them all (the add-on disabled there).
func (r *ClusterController) applyGrants(ctx context.Context, addon, cluster string, roles []*rbacv1.Role, bindings []*rbacv1.RoleBinding) error {
	selector := client.MatchingLabels{addonv1alpha1.LabelAddOn: addon, LabelCluster: cluster}
	haveRoles := &rbacv1.RoleList{}
	if err := r.Client.List(ctx, haveRoles, selector); err != nil {
		return err
	}
	haveBindings := &rbacv1.RoleBindingList{}
	if err := r.Client.List(ctx, haveBindings, selector); err != nil {
		return err
	}
	wanted := map[client.ObjectKey]bool{}
	for _, role := range roles {
		wanted[client.ObjectKeyFromObject(role)] = true
		if err := r.ensure(ctx, role, func(have client.Object) bool {
			return equality.Semantic.DeepEqual(have.(*rbacv1.Role).Rules, role.Rules)
		}); err != nil {
			return err
		}
	}
	for _, b := range bindings {
		wanted[client.ObjectKeyFromObject(b)] = true
		if err := r.ensure(ctx, b, func(have client.Object) bool {
			h := have.(*rbacv1.RoleBinding)
			return h.RoleRef == b.RoleRef && equality.Semantic.DeepEqual(h.Subjects, b.Subjects)
		}); err != nil {
			return err
		}
	}
	for i := range haveBindings.Items {
		if b := &haveBindings.Items[i]; !wanted[client.ObjectKeyFromObject(b)] {
			if err := r.Client.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	for i := range haveRoles.Items {
		if role := &haveRoles.Items[i]; !wanted[client.ObjectKeyFromObject(role)] {
			if err := r.Client.Delete(ctx, role); client.IgnoreNotFound(err) != nil {
				return err
			}
		}
	}
	return nil
}

// ensure creates obj, or replaces the one there when same says it differs (a RoleBinding's roleRef cannot
// change: it is deleted and created again).
func (r *ClusterController) ensure(ctx context.Context, obj client.Object, same func(have client.Object) bool) error {
	have := obj.DeepCopyObject().(client.Object)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(obj), have)
	switch {
	case client.IgnoreNotFound(err) != nil:
		return err
	case err == nil && same(have):
		return nil
	case err == nil:
		if err := r.Client.Delete(ctx, have); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	if err := r.Client.Create(ctx, obj.DeepCopyObject().(client.Object)); apierrors.IsNotFound(err) {
		return errMissing{fmt.Sprintf("namespace %s does not exist on the hub", obj.GetNamespace())}
	} else if err != nil {
		return fmt.Errorf("granting %s/%s: %w", obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}
