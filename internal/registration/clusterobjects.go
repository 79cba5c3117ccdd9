package registration

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
)

// EnsureClusterObjects creates what a registered cluster needs on the hub: the Cluster (when missing), its
// namespace flotilla-cluster-NAME, its Lease, the ResourceQuota that caps its reports, and, for Pull
// clusters, RBAC that lets the agent identity do exactly this: read Works and write their status in its
// namespace, renew its Lease, record events there, read its export requests and write its EndpointSlice
// reports there. What it may do with its own Cluster (read it, apply its status, open its tunnel) the hub's
// AgentAuthorizer decides, or, on a hub without one, a ClusterRole and ClusterRoleBinding of its own.
// Everything is owned by the Cluster, so deleting the Cluster removes it all.
func EnsureClusterObjects(ctx context.Context, c client.Client, desired *clusterv1alpha1.Cluster) (*clusterv1alpha1.Cluster, error) {
	cluster := &clusterv1alpha1.Cluster{}
	err := c.Get(ctx, client.ObjectKey{Name: desired.Name}, cluster)
	if apierrors.IsNotFound(err) {
		cluster = desired.DeepCopy()
		err = c.Create(ctx, cluster)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", desired.Name, err)
	}
	return cluster, ensureOwnedObjects(ctx, c, c, cluster)
}

// ensureOwnedObjects creates a Cluster's namespace, Lease and report quota and binds its agent RBAC to the
// Cluster's current agent user (CurrentAgentUser), replacing the subject of an earlier registration. reader,
// not a cache, tells whether the hub authorizes agents itself.
func ensureOwnedObjects(ctx context.Context, c client.Client, reader client.Reader, cluster *clusterv1alpha1.Cluster) error {
	owner := []metav1.OwnerReference{{
		APIVersion: clusterv1alpha1.GroupVersion.String(), Kind: "Cluster", Name: cluster.Name, UID: cluster.UID,
	}}
	ns := clusterv1alpha1.ClusterNamespace(cluster.Name)
	objs := []client.Object{
		&corev1.Namespace{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"},
			ObjectMeta: metav1.ObjectMeta{Name: ns, OwnerReferences: owner, Labels: map[string]string{LabelClusterName: cluster.Name}},
		},
		&coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: cluster.Name, Namespace: ns},
		},
		reportQuota(ns),
	}
	var rbac []client.Object
	if cluster.Spec.SyncMode == clusterv1alpha1.Pull {
		authorized, err := hubAuthorizesAgents(ctx, reader)
		if err != nil {
			return err
		}
		rbac = agentRBAC(cluster.Name, CurrentAgentUser(cluster), owner, !authorized)
	}
	for _, o := range objs {
		if err := createIfMissing(ctx, c, o); err != nil {
			return err
		}
	}
	// RBAC is applied, not only created: a re-registration moves the bindings to the new agent user and gives
	// the roles the rules of this version.
	for _, o := range rbac {
		if err := apply(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// ReportQuota names the ResourceQuota in each cluster namespace that caps the EndpointSlices reported there
// (multi-cluster services): at MaxReportedEndpointSlices of ReportedSlicesResource.
const ReportQuota = "flotilla-reports"

// ReportedSlicesResource is the object count ReportQuota caps.
const ReportedSlicesResource corev1.ResourceName = "count/endpointslices.discovery.k8s.io"

// MaxReportedEndpointSlices is how many EndpointSlices one cluster may report to the hub, for all the
// Services it exports: its agent (or, for a Push member, the hub's collector) is refused the next one. The
// member's EndpointSlice controller puts up to 100 endpoints in a slice, so 500 carry 50 exported Services
// of 1,000 pods each from one member. Without a cap, a member admin could make the hub store reports without
// end (a slice holds up to 1,000 endpoints, up to some 100 KiB); with it, one member's reports stay under 500
// objects. Events, the other thing agents create, are rate-limited per namespace instead.
const MaxReportedEndpointSlices = 500

// reportQuota is the ResourceQuota ReportQuota of cluster namespace ns. The hub's kube-controller-manager
// runs the resource quota controller, which must have counted a new quota before the API server enforces it.
func reportQuota(ns string) *corev1.ResourceQuota {
	return &corev1.ResourceQuota{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ResourceQuota"},
		ObjectMeta: metav1.ObjectMeta{Name: ReportQuota, Namespace: ns},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
			ReportedSlicesResource: *resource.NewQuantity(MaxReportedEndpointSlices, resource.DecimalSI),
		}},
	}
}

// EnsureReportQuotas gives the namespace of every registered cluster its report quota: clusters registered by
// versions before the quota existed have none until they register again. The hub runs it when it starts. A
// namespace that is gone or going is left alone.
func EnsureReportQuotas(ctx context.Context, c client.Client) error {
	clusters := &clusterv1alpha1.ClusterList{}
	if err := c.List(ctx, clusters); err != nil {
		return err
	}
	quotas := &corev1.ResourceQuotaList{}
	if err := c.List(ctx, quotas); err != nil {
		return err
	}
	has := map[string]bool{}
	for _, q := range quotas.Items {
		has[q.Namespace] = has[q.Namespace] || q.Name == ReportQuota
	}
	for _, cluster := range clusters.Items {
		ns := clusterv1alpha1.ClusterNamespace(cluster.Name)
		if has[ns] || cluster.DeletionTimestamp != nil {
			continue
		}
		err := c.Create(ctx, reportQuota(ns))
		if err != nil && !apierrors.IsAlreadyExists(err) && !apierrors.IsNotFound(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return fmt.Errorf("report quota of cluster %s: %w", cluster.Name, err)
		}
	}
	return nil
}

// EnsureAgentRoles gives the agent Role of every registered Pull cluster the rules of this version: a cluster
// registered by an earlier version keeps its Role until it registers again, and its agent would go without
// what later versions let it read (its ClusterAddOns). The hub runs it when it starts; it writes only the
// Roles whose rules differ. A namespace that is gone or going is left alone.
func EnsureAgentRoles(ctx context.Context, c client.Client) error {
	clusters := &clusterv1alpha1.ClusterList{}
	if err := c.List(ctx, clusters); err != nil {
		return err
	}
	roles := &rbacv1.RoleList{}
	if err := c.List(ctx, roles); err != nil {
		return err
	}
	current := map[string]*rbacv1.Role{}
	for i := range roles.Items {
		if roles.Items[i].Name == agentRoleName {
			current[roles.Items[i].Namespace] = &roles.Items[i]
		}
	}
	for _, cluster := range clusters.Items {
		have := current[clusterv1alpha1.ClusterNamespace(cluster.Name)]
		if cluster.Spec.SyncMode != clusterv1alpha1.Pull || cluster.DeletionTimestamp != nil || have == nil {
			continue // a Role that is missing is registration's to create
		}
		want := agentRBAC(cluster.Name, CurrentAgentUser(&cluster), nil, false)[0].(*rbacv1.Role)
		if equality.Semantic.DeepEqual(have.Rules, want.Rules) {
			continue
		}
		err := apply(ctx, c, want)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return fmt.Errorf("agent role of cluster %s: %w", cluster.Name, err)
		}
	}
	return nil
}

// agentRoleName names the agent's Role and RoleBinding in its cluster's namespace.
const agentRoleName = "flotilla:agent"

// agentRBACPrefix starts the name of an agent's ClusterRole and ClusterRoleBinding; the cluster's name ends
// it.
const agentRBACPrefix = "flotilla:agent:"

// agentRBAC returns the roles of a cluster's agent and the bindings that give them to user: a Role in the
// cluster's namespace and, with ownCluster, a ClusterRole for what the AgentAuthorizer would otherwise allow.
// Roles come before the bindings that name them.
func agentRBAC(cluster, user string, owner []metav1.OwnerReference, ownCluster bool) []client.Object {
	name, ns := agentRBACPrefix+cluster, clusterv1alpha1.ClusterNamespace(cluster)
	subjects := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	work := workv1alpha1.GroupVersion.Group
	objs := []client.Object{
		&rbacv1.Role{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "Role"},
			ObjectMeta: metav1.ObjectMeta{Name: agentRoleName, Namespace: ns},
			Rules: []rbacv1.PolicyRule{
				// update: to remove the execution finalizer once a deleted Work's objects are gone.
				{APIGroups: []string{work}, Resources: []string{"works"}, Verbs: []string{"get", "list", "watch", "update", "patch"}},
				{APIGroups: []string{work}, Resources: []string{"works/status"}, Verbs: []string{"get", "update", "patch"}},
				{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{cluster}, Verbs: []string{"get", "update"}},
				{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch"}},
				// Multi-cluster services: the hub's export requests to read, the member's EndpointSlices to report.
				{APIGroups: []string{"multicluster.x-k8s.io"}, Resources: []string{"serviceexports"}, Verbs: []string{"get", "list", "watch"}},
				{APIGroups: []string{"discovery.k8s.io"}, Resources: []string{"endpointslices"},
					Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
				// Add-ons: which are enabled here, and the hub identities their agents get (addon_credentials.go).
				{APIGroups: []string{addonv1alpha1.GroupVersion.Group}, Resources: []string{"clusteraddons"}, Verbs: []string{"get", "list", "watch"}},
			},
		},
		&rbacv1.RoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: "flotilla:agent", Namespace: ns},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "flotilla:agent"},
			Subjects:   subjects,
		},
	}
	if !ownCluster {
		return objs
	}
	// The rules of AgentAuthorizer's ownClusterRequest, for this cluster only.
	return append(objs,
		&rbacv1.ClusterRole{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owner},
			Rules: []rbacv1.PolicyRule{
				{APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, Resources: []string{"clusters"}, ResourceNames: []string{cluster}, Verbs: []string{"get"}},
				{APIGroups: []string{clusterv1alpha1.GroupVersion.Group}, Resources: []string{"clusters/status"}, ResourceNames: []string{cluster}, Verbs: []string{"patch"}},
				{APIGroups: []string{proxyv1alpha1.GroupName}, Resources: []string{proxyv1alpha1.ResourceClusters + "/" + proxyv1alpha1.SubresourceAttach}, ResourceNames: []string{cluster}, Verbs: []string{"create"}},
			},
		},
		&rbacv1.ClusterRoleBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: owner},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: name},
			Subjects:   subjects,
		},
	)
}

func createIfMissing(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating %T %s: %w", obj, client.ObjectKeyFromObject(obj), err)
	}
	return nil
}
