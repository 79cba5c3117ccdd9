package registration

import (
	"context"
	"errors"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// errNameTaken says a cluster name belongs to another registration.
var errNameTaken = errors.New("cluster name taken")

// joinRequest is what one join CSR asks for: a cluster name, the agent user of this registration, and the
// Cluster it would like.
type joinRequest struct {
	csr     *certificatesv1.CertificateSigningRequest
	cluster string
	user    string
	// key is the SHA-256 of the request's public key, "sha256:HEX".
	key string
}

// registered reports whether cluster's current agent was registered by this very request: the Cluster records
// the UID and public key of the request that registered it, and nothing else may finish that registration.
// The agent user alone proves nothing: anyone who may read Clusters sees it.
func (r joinRequest) registered(cluster *clusterv1alpha1.Cluster) bool {
	a := cluster.Annotations
	return CurrentAgentUser(cluster) == r.user && r.csr.UID != "" && a[clusterv1alpha1.AnnotationRegistrationRequest] == string(r.csr.UID) &&
		a[clusterv1alpha1.AnnotationAgentKey] == r.key
}

// record writes on cluster that this request registers its agent.
func (r joinRequest) record(cluster *clusterv1alpha1.Cluster) {
	if cluster.Annotations == nil {
		cluster.Annotations = map[string]string{}
	}
	cluster.Annotations[clusterv1alpha1.AnnotationAgentUser] = r.user
	cluster.Annotations[clusterv1alpha1.AnnotationRegistrationRequest] = string(r.csr.UID)
	cluster.Annotations[clusterv1alpha1.AnnotationAgentKey] = r.key
}

// desired is the Cluster the request asks for, with every label and location it asked for, recorded as
// belonging to this request's agent user.
func (r joinRequest) desired() *clusterv1alpha1.Cluster {
	a := r.csr.Annotations
	c := &clusterv1alpha1.Cluster{
		ObjectMeta: metav1.ObjectMeta{Name: r.cluster},
		Spec: clusterv1alpha1.ClusterSpec{
			SyncMode: clusterv1alpha1.Pull,
			ID:       a[AnnotationClusterID],
			Provider: a[AnnotationProvider],
			Region:   a[AnnotationRegion],
		},
	}
	if zones := a[AnnotationZones]; zones != "" {
		c.Spec.Zones = strings.Split(zones, ",")
	}
	if l, err := labels.ConvertSelectorToLabelsMap(a[AnnotationLabels]); err == nil && len(l) > 0 {
		c.Labels = l
	}
	r.record(c)
	return c
}

// describe tells an administrator one request apart from another.
func (r joinRequest) describe() string {
	a := r.csr.Annotations
	return fmt.Sprintf("request %s from %s: cluster ID %q, labels %q, provider %q, region %q, zones %q",
		r.csr.Name, r.csr.Spec.Username, a[AnnotationClusterID], a[AnnotationLabels], a[AnnotationProvider], a[AnnotationRegion], a[AnnotationZones])
}

// register makes desired's Cluster exist and belong to the request's agent user, with its namespace, Lease
// and RBAC. An existing Cluster of another registration is taken over only when rebind is set (an
// administrator accepted) and it is the same member (cluster ID) in Pull mode; otherwise errNameTaken. A
// Cluster whose agent user is the request's but was registered by another request is never finished by
// this one (errNameTaken).
// Reads go to reader, uncached: two joins racing for one name must see each other's writes. After the
// objects exist the Cluster is read again, so of two requests that raced, only the one it records wins.
func register(ctx context.Context, c client.Client, reader client.Reader, r joinRequest, desired *clusterv1alpha1.Cluster, rebind bool) (*clusterv1alpha1.Cluster, error) {
	cluster := desired.DeepCopy()
	err := c.Create(ctx, cluster)
	if apierrors.IsAlreadyExists(err) {
		cluster = &clusterv1alpha1.Cluster{}
		err = reader.Get(ctx, client.ObjectKey{Name: desired.Name}, cluster)
	}
	if err != nil {
		return nil, fmt.Errorf("cluster %s: %w", desired.Name, err)
	}
	if CurrentAgentUser(cluster) == r.user && !r.registered(cluster) {
		return nil, fmt.Errorf("%w: the agent user %s of cluster %s was registered by another request; a join must ask for an identity of its own",
			errNameTaken, r.user, cluster.Name)
	}
	if !r.registered(cluster) {
		if !rebind || cluster.DeletionTimestamp != nil || cluster.Spec.SyncMode != clusterv1alpha1.Pull || cluster.Spec.ID == "" || cluster.Spec.ID != desired.Spec.ID {
			return nil, fmt.Errorf("%w: cluster name %q is already registered to another cluster (id %q, mode %s); choose another --cluster-name or unjoin %s first",
				errNameTaken, cluster.Name, cluster.Spec.ID, cluster.Spec.SyncMode, cluster.Name)
		}
		// The optimistic lock makes two accepted re-registrations of one name take turns: the second sees
		// the first's agent user on its retry and fails above.
		patch := client.MergeFromWithOptions(cluster.DeepCopy(), client.MergeFromWithOptimisticLock{})
		r.record(cluster)
		if err := c.Patch(ctx, cluster, patch); err != nil {
			return nil, fmt.Errorf("re-registering cluster %s: %w", cluster.Name, err)
		}
	}
	if err := ensureOwnedObjects(ctx, c, reader, cluster); err != nil {
		return nil, err
	}
	current := &clusterv1alpha1.Cluster{}
	if err := reader.Get(ctx, client.ObjectKey{Name: cluster.Name}, current); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", cluster.Name, err)
	}
	if current.UID != cluster.UID || !r.registered(current) {
		return nil, fmt.Errorf("%w: cluster %s was registered by another request at the same time", errNameTaken, cluster.Name)
	}
	return current, nil
}

// NameTaken reports whether cluster is registered to a different member (another cluster ID) or in another
// sync mode, and says why. Push joins use it: they are made by a hub administrator, whose word the cluster
// ID is.
func NameTaken(ctx context.Context, c client.Client, cluster, clusterID string, mode clusterv1alpha1.ClusterSyncMode) (string, bool, error) {
	existing := &clusterv1alpha1.Cluster{}
	err := c.Get(ctx, client.ObjectKey{Name: cluster}, existing)
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	if existing.Spec.ID != "" && existing.Spec.ID == clusterID && existing.Spec.SyncMode == mode {
		return "", false, nil
	}
	return fmt.Sprintf("cluster name %q is already registered to another cluster (id %q, mode %s); choose another --cluster-name or unjoin %s first",
		cluster, existing.Spec.ID, existing.Spec.SyncMode, cluster), true, nil
}
