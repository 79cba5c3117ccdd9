package registration

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

// AnnotationAgentAuthorizer on the hub's system namespace says that the hub's API server runs an
// AgentAuthorizer, so a registration binds no ClusterRole per agent. The embedded hub sets it
// (AuthorizeAgentsInHub); a hub on an existing cluster, whose API server Flotilla does not run, does not.
const AnnotationAgentAuthorizer = "flotilla.io/agent-authorizer"

// AgentAuthorizer decides the requests an agent makes about its own Cluster: read it, apply its status facts,
// open its tunnel. It allows them for the Cluster's current agent (CurrentAgentUser) of a Pull Cluster, in
// the agents' group, and has no opinion on anything else, which RBAC then decides.
//
// It stands in for a ClusterRole and ClusterRoleBinding per agent, the way Kubernetes' Node authorizer stands
// in for a binding per kubelet. RBAC reads every ClusterRoleBinding for every request, so bindings per agent
// made each request of every agent cost more as the fleet grew (at 5,000 clusters a quarter of the hub's
// CPU at rest). This authorizer decides from the user name and one Cluster read from a cache.
type AgentAuthorizer struct {
	clusters atomic.Pointer[clusterReaders]
}

type clusterReaders struct{ cached, live client.Reader }

// Use gives the authorizer the Clusters to decide by: cached, a cache of Clusters, and live, a reader of the
// API server. A Cluster the cache does not show with the requesting agent (a registration a moment old) is
// read live before the authorizer gives up. Until Use, it has no opinion.
func (a *AgentAuthorizer) Use(cached, live client.Reader) {
	a.clusters.Store(&clusterReaders{cached: cached, live: live})
}

// Authorize decides one request (authorizer.AuthorizerFunc makes it an authorizer.Authorizer).
func (a *AgentAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	u := attrs.GetUser()
	if u == nil || !attrs.IsResourceRequest() || !ownClusterRequest(attrs) || !slices.Contains(u.GetGroups(), AgentGroup) {
		return authorizer.DecisionNoOpinion, "", nil
	}
	name, _, ok := ParseAgentUser(u.GetName())
	if !ok || name != attrs.GetName() {
		return authorizer.DecisionNoOpinion, "", nil
	}
	readers := a.clusters.Load()
	if readers == nil {
		return authorizer.DecisionNoOpinion, "", errors.New("the hub's cache of clusters is not ready")
	}
	var errs []error
	for _, r := range []client.Reader{readers.cached, readers.live} {
		cluster := &clusterv1alpha1.Cluster{}
		err := r.Get(ctx, client.ObjectKey{Name: name}, cluster)
		if err == nil && cluster.Spec.SyncMode == clusterv1alpha1.Pull && CurrentAgentUser(cluster) == u.GetName() {
			return authorizer.DecisionAllow, "the current agent of cluster " + name, nil
		}
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	return authorizer.DecisionNoOpinion, "not the current agent of a Pull cluster " + name, errors.Join(errs...)
}

// ownClusterRequest reports whether attrs is one of the requests an agent makes about its Cluster (the name
// is checked by the caller).
func ownClusterRequest(attrs authorizer.Attributes) bool {
	if attrs.GetResource() != "clusters" {
		return false
	}
	type request struct{ group, subresource, verb string }
	switch (request{attrs.GetAPIGroup(), attrs.GetSubresource(), attrs.GetVerb()}) {
	case request{clusterv1alpha1.GroupVersion.Group, "", "get"},
		// patch: the agent applies the status facts it owns (server-side apply), never a whole status.
		request{clusterv1alpha1.GroupVersion.Group, "status", "patch"},
		// create: the agent opens its tunnel with an upgraded POST on its own cluster's attach subresource of
		// the hub's aggregated proxy API (internal/tunnel).
		request{proxyv1alpha1.GroupName, proxyv1alpha1.SubresourceAttach, "create"}:
		return true
	}
	return false
}

// AuthorizeAgentsInHub records, on the hub's system namespace, that the hub's API server runs an
// AgentAuthorizer, and removes the ClusterRoles and ClusterRoleBindings per agent that registrations made
// before it did: they grant nothing the authorizer does not, and each one slows every request.
func AuthorizeAgentsInHub(ctx context.Context, c client.Client) error {
	ns := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.SystemNamespace}, ns); err != nil {
		return err
	}
	if ns.Annotations[AnnotationAgentAuthorizer] != "true" {
		patch := client.MergeFrom(ns.DeepCopy())
		if ns.Annotations == nil {
			ns.Annotations = map[string]string{}
		}
		ns.Annotations[AnnotationAgentAuthorizer] = "true"
		if err := c.Patch(ctx, ns, patch); err != nil {
			return fmt.Errorf("marking namespace %s: %w", ns.Name, err)
		}
	}
	for _, list := range []client.ObjectList{&rbacv1.ClusterRoleBindingList{}, &rbacv1.ClusterRoleList{}} {
		if err := c.List(ctx, list); err != nil {
			return err
		}
		err := meta.EachListItem(list, func(o runtime.Object) error {
			if obj := o.(client.Object); isAgentClusterRBAC(obj) {
				return client.IgnoreNotFound(c.Delete(ctx, obj))
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// hubAuthorizesAgents reports whether the hub runs an AgentAuthorizer (AnnotationAgentAuthorizer).
func hubAuthorizesAgents(ctx context.Context, reader client.Reader) (bool, error) {
	ns := &corev1.Namespace{}
	if err := reader.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.SystemNamespace}, ns); err != nil {
		return false, fmt.Errorf("reading namespace %s: %w", clusterv1alpha1.SystemNamespace, err)
	}
	return ns.Annotations[AnnotationAgentAuthorizer] == "true", nil
}

// isAgentClusterRBAC reports whether obj is the ClusterRole or ClusterRoleBinding of one agent
// (agentRBAC): named for its cluster and owned by its Cluster.
func isAgentClusterRBAC(obj client.Object) bool {
	cluster, ok := strings.CutPrefix(obj.GetName(), agentRBACPrefix)
	return ok && slices.ContainsFunc(obj.GetOwnerReferences(), func(o metav1.OwnerReference) bool {
		return o.Kind == "Cluster" && o.APIVersion == clusterv1alpha1.GroupVersion.String() && o.Name == cluster
	})
}
