package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"slices"
	"strings"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/transport"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

// clusterList is what one cluster gave to a fleet list.
type clusterList struct {
	items           []map[string]any
	resourceVersion string
	err             error
	// notPermitted: the caller may not reach the cluster, which was not read.
	notPermitted bool
	// truncated: the member has more items than the limit passed on.
	truncated bool
}

// read lists the member collection in cluster as the caller, if the hub's RBAC lets the caller use
// clusters/proxy on it (the same check as a request to clusters/NAME/proxy), within timeout.
// A cluster without a UID is a name no Cluster has (selected): it is refused without asking.
func (l *fleetLister) read(ctx context.Context, cluster *clusterv1alpha1.Cluster, query string, timeout time.Duration) clusterList {
	if cluster.UID == "" {
		return clusterList{err: notPermitted(l.caller, cluster.Name, "", nil), notPermitted: true}
	}
	if err := l.mayProxy(ctx, cluster.Name); err != nil {
		return clusterList{err: err, notPermitted: true}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list, err := l.get(ctx, cluster, query)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = apierrors.NewTimeoutError(fmt.Sprintf("cluster %s: no answer within %s (%s)", cluster.Name, timeout, paramClusterTimeout), 0)
	}
	list.err = err
	return list
}

// mayProxy asks the hub's authorizer (a SubjectAccessReview, cached briefly) whether the caller may get
// clusters/proxy on cluster. A cluster the caller may not reach is never read.
func (l *fleetLister) mayProxy(ctx context.Context, cluster string) error {
	decision, reason, err := l.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: l.caller, Verb: "get", APIGroup: proxyv1alpha1.GroupName, APIVersion: proxyv1alpha1.GroupVersion.Version,
		Resource: clustersResource.Resource, Subresource: proxyv1alpha1.SubresourceProxy, Name: cluster, ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	return notPermitted(l.caller, cluster, reason, err)
}

// notPermitted is the Forbidden entry of a cluster the caller may not reach.
func notPermitted(caller user.Info, cluster, reason string, err error) error {
	why := fmt.Sprintf("user %q may not get clusters/proxy on cluster %s: the cluster was not read", caller.GetName(), cluster)
	if reason != "" {
		why += ": " + reason
	}
	if err != nil {
		why += fmt.Sprintf(" (authorization failed: %v)", err)
	}
	return apierrors.NewForbidden(clustersResource, cluster, fmt.Errorf("%s", why))
}

// mayListClusters says whether the caller may list the hub's Clusters, and so learn their names.
func (l *fleetLister) mayListClusters(ctx context.Context) bool {
	decision, _, _ := l.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: l.caller, Verb: "list", APIGroup: clusterv1alpha1.GroupVersion.Group, APIVersion: clusterv1alpha1.GroupVersion.Version,
		Resource: "clusters", ResourceRequest: true,
	})
	return decision == authorizer.DecisionAllow
}

// get sends the list request to the member, as the hub with the caller impersonated, and annotates the items
// it answers with the cluster. It reads at most maxMemberListBytes of the answer.
func (l *fleetLister) get(ctx context.Context, cluster *clusterv1alpha1.Cluster, query string) (clusterList, error) {
	target, err := l.backends.For(ctx, cluster)
	if err != nil {
		return clusterList{}, err
	}
	location := *target.URL
	location.Path = path.Join("/", location.Path, l.memberPath)
	location.RawQuery = query
	out, err := http.NewRequestWithContext(ctx, http.MethodGet, location.String(), nil)
	if err != nil {
		return clusterList{}, apierrors.NewBadRequest(err.Error())
	}
	out.Header.Set("Accept", "application/json")
	resp, err := transport.NewImpersonatingRoundTripper(impersonation(l.caller, l.systemGroups), target.Transport).RoundTrip(out)
	if err != nil {
		return clusterList{}, apierrors.NewServiceUnavailable(fmt.Sprintf("cluster %s: %v", cluster.Name, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxMemberListBytes+1))
	if err != nil {
		return clusterList{}, apierrors.NewServiceUnavailable(fmt.Sprintf("cluster %s: reading its answer: %v", cluster.Name, err))
	}
	if len(body) > maxMemberListBytes {
		return clusterList{}, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInsufficientStorage, Reason: metav1.StatusReasonRequestEntityTooLarge,
			Message: fmt.Sprintf("cluster %s: its answer is larger than the %d MiB a fleet list reads of one cluster: narrow the selector (a namespace, labelSelector, fieldSelector) or pass limit", cluster.Name, maxMemberListBytes>>20)}}
	}
	if resp.StatusCode != http.StatusOK {
		return clusterList{}, memberError(resp.StatusCode, body)
	}
	// UnstructuredList gives the items of a typed list (PodList) their apiVersion and kind, which the
	// member leaves out.
	list := &unstructured.UnstructuredList{}
	if err := list.UnmarshalJSON(body); err != nil {
		return clusterList{}, apierrors.NewInternalError(fmt.Errorf("cluster %s: its answer is not a list: %w", cluster.Name, err))
	}
	items := make([]map[string]any, 0, len(list.Items))
	for _, item := range list.Items {
		annotations := item.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[clusterv1alpha1.AnnotationCluster] = cluster.Name
		item.SetAnnotations(annotations)
		items = append(items, item.Object)
	}
	return clusterList{items: items, resourceVersion: list.GetResourceVersion(), truncated: list.GetContinue() != ""}, nil
}

// memberError is the member's refusal as it sent it (a Status), or one made from its code and body.
func memberError(code int, body []byte) error {
	status := metav1.Status{}
	if err := json.Unmarshal(body, &status); err == nil && status.Kind == "Status" && status.Code != 0 {
		return &apierrors.StatusError{ErrStatus: status}
	}
	return apierrors.NewGenericServerResponse(code, "get", clustersResource, "", string(body), 0, false)
}

// impersonation is how the member sees the caller: the same user, uid, extras and groups, except the hub's
// system:* groups (system:masters, system:serviceaccounts:NS, ...), which mean something on the hub only:
// of those, the member sees system:authenticated and the ones the hub is told to pass on (systemGroups).
func impersonation(caller user.Info, systemGroups []string) transport.ImpersonationConfig {
	var groups []string
	for _, g := range caller.GetGroups() {
		if !strings.HasPrefix(g, "system:") || g == user.AllAuthenticated || slices.Contains(systemGroups, g) {
			groups = append(groups, g)
		}
	}
	return transport.ImpersonationConfig{UserName: caller.GetName(), UID: caller.GetUID(), Groups: groups, Extra: caller.GetExtra()}
}

// FleetListRole names the ClusterRole and ClusterRoleBinding that let the hub's fleet users (the groups the
// admin chose, Config.UserGroups) ask for a fleet list. The hub's kube-apiserver authorizes the request as
// get on fleet/api or fleet/apis (the first segment of the member path is its subresource), name list; the
// list then authorizes each cluster on its own (mayProxy) and reads none the caller may not reach, so the
// grant gives no access by itself, only a share of the hub's work. The hub rewrites the binding when it
// starts.
const FleetListRole = "flotilla:fleet-list"

func fleetListRBAC(groups []string) (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: FleetListRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{proxyv1alpha1.GroupName}, Resources: []string{fleetResource.Resource + "/api", fleetResource.Resource + "/apis"},
			ResourceNames: []string{proxyv1alpha1.FleetListName}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: FleetListRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: FleetListRole},
		Subjects:   GroupSubjects(groups),
	}
	return role, binding
}

// GroupSubjects are RBAC subjects for groups.
func GroupSubjects(groups []string) []rbacv1.Subject {
	subjects := make([]rbacv1.Subject, 0, len(groups))
	for _, g := range groups {
		subjects = append(subjects, rbacv1.Subject{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: g})
	}
	return subjects
}
