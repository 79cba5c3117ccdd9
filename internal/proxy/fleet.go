package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	proxyv1alpha1 "github.com/flotilla-io/flotilla/api/proxy/v1alpha1"
)

// fleetResource is the resource of fleet-wide reads.
var fleetResource = proxyv1alpha1.GroupVersion.WithResource(proxyv1alpha1.ResourceFleet).GroupResource()

// Query parameters of a fleet list that are not forwarded to the members.
const (
	// paramClusters narrows the list to the named clusters (comma-separated); default: every cluster.
	paramClusters = "clusters"
	// paramClusterTimeout bounds each cluster's answer; default defaultClusterTimeout.
	paramClusterTimeout = "clusterTimeout"
)

const (
	defaultClusterTimeout = 10 * time.Second
	// maxClusterTimeout stays below the hub's request timeout (60 s), so the list always answers.
	maxClusterTimeout = 50 * time.Second
	// fleetReadsAtOnce bounds the member requests one fleet list has open at a time.
	fleetReadsAtOnce = 32
	// fleetListsPerUser and fleetListsAtOnce bound the fleet lists this hub process answers at a time, for one
	// user and for everyone: each may hold fleetReadsAtOnce member reads open and their answers in memory.
	fleetListsPerUser = 4
	fleetListsAtOnce  = 64
	// maxMemberListBytes is the most the hub reads of one member's answer to a fleet list. A larger answer
	// is the cluster's error, not a reason to hold gigabytes: narrow the selector or pass limit.
	maxMemberListBytes = 32 << 20
)

// fleetREST serves fleet/list/PATH: GET of the collection PATH in each selected member, as the caller, for the
// clusters on which the hub's RBAC lets the caller use clusters/proxy. The fleet's user groups may ask (see
// FleetListRole), within a budget (budget): each cluster is authorized on its own before it is read.
type fleetREST struct {
	clusters   *clusterREST
	backends   Backend
	authorizer authorizer.Authorizer
	running    budget
	// systemGroups are the hub's system:* groups passed on to members (impersonation).
	systemGroups []string
}

// budget counts the fleet lists being answered, per user and in total.
type budget struct {
	mu     sync.Mutex
	total  int
	byUser map[string]int
}

// take admits one more fleet list of user, or says why not; release undoes it.
func (b *budget) take(user string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byUser == nil {
		b.byUser = map[string]int{}
	}
	switch {
	case b.byUser[user] >= fleetListsPerUser:
		return apierrors.NewTooManyRequests(fmt.Sprintf("user %q has %d fleet lists running, the most one user may", user, fleetListsPerUser), 1)
	case b.total >= fleetListsAtOnce:
		return apierrors.NewTooManyRequests(fmt.Sprintf("the hub is answering %d fleet lists, the most it answers at once", fleetListsAtOnce), 1)
	}
	b.byUser[user]++
	b.total++
	return nil
}

func (b *budget) release(user string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total--
	if b.byUser[user]--; b.byUser[user] == 0 {
		delete(b.byUser, user)
	}
}

var (
	_ rest.Connecter            = &fleetREST{}
	_ rest.Scoper               = &fleetREST{}
	_ rest.SingularNameProvider = &fleetREST{}
)

// New returns the options type: a fleet list carries the member path as the proxy does.
func (r *fleetREST) New() runtime.Object     { return &proxyv1alpha1.ClusterProxyOptions{} }
func (r *fleetREST) Destroy()                {}
func (r *fleetREST) NamespaceScoped() bool   { return false }
func (r *fleetREST) GetSingularName() string { return proxyv1alpha1.ResourceFleet }

// NewConnectOptions asks the installer for the path below fleet/list in proxyv1alpha1.ClusterProxyOptions.Path.
func (r *fleetREST) NewConnectOptions() (runtime.Object, bool, string) {
	return &proxyv1alpha1.ClusterProxyOptions{}, true, "path"
}

// ConnectMethods: a fleet list only reads.
func (r *fleetREST) ConnectMethods() []string { return []string{"GET"} }

// Connect validates the request (every bad input is refused before any cluster is read) and returns the
// handler that reads the clusters.
func (r *fleetREST) Connect(ctx context.Context, name string, opts runtime.Object, _ rest.Responder) (http.Handler, error) {
	if name != proxyv1alpha1.FleetListName {
		return nil, apierrors.NewNotFound(fleetResource, name)
	}
	caller, ok := request.UserFrom(ctx)
	if !ok {
		return nil, apierrors.NewUnauthorized("no authenticated user")
	}
	memberPath, err := collectionPath(opts.(*proxyv1alpha1.ClusterProxyOptions).Path)
	if err != nil {
		return nil, err
	}
	return &fleetLister{fleetREST: r, caller: caller, memberPath: memberPath}, nil
}

// collectionPath accepts only the path of a collection: /api/V[/namespaces/NS]/RESOURCE or
// /apis/G/V[/namespaces/NS]/RESOURCE.
func collectionPath(p string) (string, error) {
	parts := strings.Split(strings.Trim(p, "/"), "/")
	// after is the index of the segment after the version: the resource, or "namespaces".
	after := 2
	if parts[0] == "apis" {
		after = 3
	}
	ok := (parts[0] == "api" || parts[0] == "apis") && !slices.ContainsFunc(parts, func(s string) bool { return s == "" || s == "." || s == ".." }) &&
		(len(parts) == after+1 || (len(parts) == after+3 && parts[after] == "namespaces"))
	if !ok {
		return "", apierrors.NewBadRequest(fmt.Sprintf("fleet list path %q: want the path of a collection, /api/VERSION[/namespaces/NS]/RESOURCE or /apis/GROUP/VERSION[/namespaces/NS]/RESOURCE", p))
	}
	return "/" + strings.Join(parts, "/"), nil
}

// fleetLister answers one fleet list.
type fleetLister struct {
	*fleetREST
	caller     user.Info
	memberPath string
}

func (l *fleetLister) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if err := l.running.take(l.caller.GetName()); err != nil {
		writeJSON(w, statusOf(err))
		return
	}
	defer l.running.release(l.caller.GetName())
	if err := l.list(w, req); err != nil {
		writeJSON(w, statusOf(err))
	}
}

// list validates the request, reads the clusters and streams the answer: each cluster's items are written as
// soon as it and every cluster before it have answered. It returns an error only before anything is written.
func (l *fleetLister) list(w http.ResponseWriter, req *http.Request) error {
	if err := refuseChosenIdentity(req); err != nil {
		return err
	}
	query := req.URL.Query()
	for _, p := range []string{"watch", "continue"} {
		if query.Has(p) {
			return apierrors.NewBadRequest(fmt.Sprintf("query parameter %s: a fleet list is one read of each cluster, neither a watch nor continued (limit is passed on to each cluster)", p))
		}
	}
	timeout := defaultClusterTimeout
	if v := query.Get(paramClusterTimeout); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 || d > maxClusterTimeout {
			return apierrors.NewBadRequest(fmt.Sprintf("%s=%s: want a duration above 0 and at most %s", paramClusterTimeout, v, maxClusterTimeout))
		}
		timeout = d
	}
	clusters, nameForbidden, err := l.selected(req.Context(), query.Get(paramClusters))
	if err != nil {
		return err
	}
	forwarded := url.Values{}
	for k, v := range query {
		if k != paramClusters && k != paramClusterTimeout {
			forwarded[k] = v
		}
	}
	results := make([]chan clusterList, len(clusters))
	slots := make(chan struct{}, fleetReadsAtOnce)
	for i := range clusters {
		results[i] = make(chan clusterList, 1)
		go func() {
			slots <- struct{}{}
			defer func() { <-slots }()
			results[i] <- l.read(req.Context(), &clusters[i], forwarded.Encode(), timeout)
		}()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	stream := &listStream{w: w}
	stream.raw(`{"kind":"FleetList","apiVersion":"` + proxyv1alpha1.GroupVersion.String() + `","metadata":{},"items":[`)
	entries := []proxyv1alpha1.FleetListCluster{}
	for i := range clusters {
		r := <-results[i]
		if r.notPermitted && !nameForbidden {
			continue
		}
		entry := proxyv1alpha1.FleetListCluster{Name: clusters[i].Name, Items: len(r.items), ResourceVersion: r.resourceVersion, Truncated: r.truncated}
		if r.err != nil {
			entry.Error = statusOf(r.err)
		}
		entries = append(entries, entry)
		for _, item := range r.items {
			stream.item(item)
		}
	}
	stream.raw(`],"clusters":`)
	stream.value(entries)
	stream.raw("}\n")
	return nil
}

// listStream writes a fleet list as it is read; after a failed write (the client left) it writes nothing.
type listStream struct {
	w     io.Writer
	items int
	err   error
}

func (s *listStream) raw(text string) {
	if s.err == nil {
		_, s.err = io.WriteString(s.w, text)
	}
}

// item writes one element of the items array, after a comma unless it is the first.
func (s *listStream) item(item map[string]any) {
	if s.items > 0 {
		s.raw(",")
	}
	s.items++
	s.value(item)
}

func (s *listStream) value(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(statusOf(err))
	}
	s.raw(string(data))
}

// selected resolves the clusters parameter, sorted by name, and says whether the clusters the caller may not
// reach are to be named in the answer. Without the parameter they are every Cluster of the hub, and the
// ones the caller may not reach are named only if the caller may list the hub's Clusters: a fleet list does
// not tell anyone which clusters exist. The parameter is a set of at most as many names as there are
// Clusters. A name no Cluster has is NotFound for a caller who may list Clusters; to anyone else it looks
// like a cluster they may not reach, without a review of its own.
func (l *fleetLister) selected(ctx context.Context, param string) ([]clusterv1alpha1.Cluster, bool, error) {
	all := &clusterv1alpha1.ClusterList{}
	if err := l.clusters.clusters.List(ctx, all); err != nil {
		return nil, false, err
	}
	slices.SortFunc(all.Items, func(a, b clusterv1alpha1.Cluster) int { return strings.Compare(a.Name, b.Name) })
	if param == "" {
		return all.Items, l.mayListClusters(ctx), nil
	}
	names := strings.Split(param, ",")
	slices.Sort(names)
	names = slices.Compact(names)
	if len(names) > max(len(all.Items), 1) {
		return nil, false, apierrors.NewBadRequest(fmt.Sprintf("%s: %d names, more than the hub has Clusters (%d)", paramClusters, len(names), len(all.Items)))
	}
	var chosen []clusterv1alpha1.Cluster
	var unknown []string
	for _, name := range names {
		if bad := validation.IsDNS1123Label(name); len(bad) > 0 {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("%s: cluster %q: %s", paramClusters, name, strings.Join(bad, "; ")))
		}
		if i := slices.IndexFunc(all.Items, func(c clusterv1alpha1.Cluster) bool { return c.Name == name }); i >= 0 {
			chosen = append(chosen, all.Items[i])
		} else {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 && l.mayListClusters(ctx) {
		return nil, false, apierrors.NewNotFound(clustersResource, unknown[0])
	}
	for _, name := range unknown {
		// Never read: read refuses it first, without asking.
		chosen = append(chosen, clusterv1alpha1.Cluster{ObjectMeta: metav1.ObjectMeta{Name: name}})
	}
	slices.SortFunc(chosen, func(a, b clusterv1alpha1.Cluster) int { return strings.Compare(a.Name, b.Name) })
	return chosen, true, nil
}

// statusOf is the API Status an error stands for; an error that is none is an internal error.
func statusOf(err error) *metav1.Status {
	var s apierrors.APIStatus
	if errors.As(err, &s) {
		status := s.Status()
		return &status
	}
	status := apierrors.NewInternalError(err).Status()
	return &status
}

// writeJSON writes a Status with its code, anything else with 200.
func writeJSON(w http.ResponseWriter, obj any) {
	code := http.StatusOK
	if s, ok := obj.(*metav1.Status); ok {
		s.APIVersion, s.Kind = "v1", "Status"
		code = int(s.Code)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(obj)
}
