package proxy

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/transport"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// clusterList is what one cluster gave to a fleet list.
type clusterList struct {
	items           []map[string]any
	resourceVersion string
	err             error
	// notPermitted: the caller may not reach the cluster, which was not read.
	notPermitted bool
}

// read lists the member collection in cluster as the caller, if the hub's RBAC lets the caller use
// clusters/proxy on it (the same check as a request to clusters/NAME/proxy), within timeout.
func (l *fleetLister) read(ctx context.Context, cluster *clusterv1alpha1.Cluster, query string, timeout time.Duration) clusterList {
	if err := l.mayProxy(ctx, cluster.Name); err != nil {
		return clusterList{err: err, notPermitted: true}
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	items, rv, err := l.get(ctx, cluster, query)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		err = apierrors.NewTimeoutError(fmt.Sprintf("cluster %s: no answer within %s (%s)", cluster.Name, timeout, paramClusterTimeout), 0)
	}
	return clusterList{items: items, resourceVersion: rv, err: err}
}

// mayProxy asks the hub's authorizer (a SubjectAccessReview, cached briefly) whether the caller may get
// clusters/proxy on cluster. A cluster the caller may not reach is never read.
func (l *fleetLister) mayProxy(ctx context.Context, cluster string) error {
	decision, reason, err := l.authorizer.Authorize(ctx, authorizer.AttributesRecord{
		User: l.caller, Verb: "get", APIGroup: GroupName, APIVersion: SchemeGroupVersion.Version,
		Resource: clustersResource.Resource, Subresource: "proxy", Name: cluster, ResourceRequest: true,
	})
	if decision == authorizer.DecisionAllow {
		return nil
	}
	why := fmt.Sprintf("user %q may not get clusters/proxy on cluster %s: the cluster was not read", l.caller.GetName(), cluster)
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
// it answers with the cluster.
func (l *fleetLister) get(ctx context.Context, cluster *clusterv1alpha1.Cluster, query string) ([]map[string]any, string, error) {
	target, err := l.backends.For(ctx, cluster)
	if err != nil {
		return nil, "", err
	}
	location := *target.URL
	location.Path = path.Join("/", location.Path, l.memberPath)
	location.RawQuery = query
	out, err := http.NewRequestWithContext(ctx, http.MethodGet, location.String(), nil)
	if err != nil {
		return nil, "", apierrors.NewBadRequest(err.Error())
	}
	out.Header.Set("Accept", "application/json")
	resp, err := transport.NewImpersonatingRoundTripper(impersonation(l.caller), target.Transport).RoundTrip(out)
	if err != nil {
		return nil, "", apierrors.NewServiceUnavailable(fmt.Sprintf("cluster %s: %v", cluster.Name, err))
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, "", apierrors.NewServiceUnavailable(fmt.Sprintf("cluster %s: reading its answer: %v", cluster.Name, err))
	}
	if resp.StatusCode != http.StatusOK {
		return nil, "", memberError(resp.StatusCode, body)
	}
	// UnstructuredList gives the items of a typed list (PodList) their apiVersion and kind, which the
	// member leaves out.
	list := &unstructured.UnstructuredList{}
	if err := list.UnmarshalJSON(body); err != nil {
		return nil, "", apierrors.NewInternalError(fmt.Errorf("cluster %s: its answer is not a list: %w", cluster.Name, err))
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
	return items, list.GetResourceVersion(), nil
}

// memberError is the member's refusal as it sent it (a Status), or one made from its code and body.
func memberError(code int, body []byte) error {
	status := metav1.Status{}
	if err := json.Unmarshal(body, &status); err == nil && status.Kind == "Status" && status.Code != 0 {
		return &apierrors.StatusError{ErrStatus: status}
	}
	return apierrors.NewGenericServerResponse(code, "get", clustersResource, "", string(body), 0, false)
}

// impersonation is how the member sees the caller: the same user, uid, groups and extras.
func impersonation(caller user.Info) transport.ImpersonationConfig {
	return transport.ImpersonationConfig{UserName: caller.GetName(), UID: caller.GetUID(), Groups: caller.GetGroups(), Extra: caller.GetExtra()}
}

// FleetListRole names the ClusterRole and ClusterRoleBinding that let every authenticated user of the hub ask
// for a fleet list. The hub's kube-apiserver authorizes the request as get on fleet/api or fleet/apis (the
// first segment of the member path is its subresource), name list; the list then authorizes each cluster on
// its own (mayProxy) and reads none the caller may not reach, so the grant gives no access by itself.
// Deleting the binding turns fleet lists off for all but hub admins; the hub recreates it when it starts.
const FleetListRole = "flotilla:fleet-list"

func fleetListRBAC() (*rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding) {
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{Name: FleetListRole},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{GroupName}, Resources: []string{fleetResource.Resource + "/api", fleetResource.Resource + "/apis"},
			ResourceNames: []string{fleetListName}, Verbs: []string{"get"}}},
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: FleetListRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: FleetListRole},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: user.AllAuthenticated}},
	}
	return role, binding
}
