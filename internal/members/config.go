package members

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
)

// Timeout bounds each request the hub sends a push member, as long as a heartbeat period (as an agent bounds
// its requests to its member), so that a hung member costs a heartbeat and not a stuck worker. Watches and
// proxied requests, which last as long as their caller wants, clear it.
const Timeout = 10 * time.Second

// InvalidCredentialsError says a Push cluster's Secret is missing or holds credentials the hub refuses to use.
// Other errors reading the Secret are passing trouble, not a verdict on the credentials.
type InvalidCredentialsError struct{ err error }

func (e *InvalidCredentialsError) Error() string { return e.err.Error() }
func (e *InvalidCredentialsError) Unwrap() error { return e.err }

// Config returns the client configuration of a Push cluster, from its spec and the Secret it names (read
// with secrets, which should read straight from the API server: the hub caches no Secrets), with requests
// bounded by Timeout. Before the hub uses an endpoint, proxy or Secret it has not used for this Cluster, it
// confirms that the member answers with the Cluster's ID (checkClusterID); one that answers as another
// cluster is an InvalidCredentialsError.
func Config(ctx context.Context, secrets client.Reader, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
	cfg, err := unconfirmedConfig(ctx, secrets, cluster)
	if err != nil {
		return nil, err
	}
	fields := cluster.Spec.Credential()
	if last, ok := confirmed.Load(cluster.UID); ok && last.(confirmation).fields == fields && time.Since(last.(confirmation).at) < confirmAgain {
		return cfg, nil
	}
	member, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, &InvalidCredentialsError{err}
	}
	if err := checkClusterID(ctx, member, cluster); err != nil {
		return nil, err
	}
	confirmed.Store(cluster.UID, confirmation{fields: fields, at: time.Now()})
	return cfg, nil
}

// unconfirmedConfig builds the client configuration of a Push cluster without confirming it.
func unconfirmedConfig(ctx context.Context, secrets client.Reader, cluster *clusterv1alpha1.Cluster) (*rest.Config, error) {
	ref := cluster.Spec.SecretRef
	if ref == nil {
		return nil, &InvalidCredentialsError{fmt.Errorf("push cluster %s has no spec.secretRef", cluster.Name)}
	}
	secret := &corev1.Secret{}
	if err := secrets.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, secret); err != nil {
		err = fmt.Errorf("credentials of push cluster %s: %w", cluster.Name, err)
		if apierrors.IsNotFound(err) {
			return nil, &InvalidCredentialsError{err}
		}
		return nil, err
	}
	cfg, err := RESTConfig(cluster, secret)
	if err != nil {
		return nil, &InvalidCredentialsError{fmt.Errorf("credentials of push cluster %s in Secret %s/%s: %w", cluster.Name, ref.Namespace, ref.Name, err)}
	}
	cfg.Timeout = Timeout
	return cfg, nil
}

// checkClusterID confirms that the member answers with the Cluster's ID (its kube-system namespace's UID):
// a changed endpoint, proxy or Secret that leads to another cluster is refused before anything is sent
// there. A member that cannot be reached is passing trouble; one that answers as another cluster, or does
// not let the credentials read kube-system, is an invalid credential.
func checkClusterID(ctx context.Context, member kubernetes.Interface, cluster *clusterv1alpha1.Cluster) error {
	if cluster.Spec.ID == "" {
		return nil
	}
	ns, err := member.CoreV1().Namespaces().Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	switch {
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		return &InvalidCredentialsError{fmt.Errorf("the credentials cannot read namespace kube-system at %s, so the hub cannot confirm it is cluster %s: %w",
			cluster.Spec.APIEndpoint, cluster.Spec.ID, err)}
	case err != nil:
		return err
	case string(ns.UID) != cluster.Spec.ID:
		return &InvalidCredentialsError{fmt.Errorf("the member at %s is cluster %s, not %s (spec.id): its endpoint or credentials lead to another cluster, and the hub uses neither",
			cluster.Spec.APIEndpoint, ns.UID, cluster.Spec.ID)}
	}
	return nil
}

// confirmAgain is how long a confirmation that a push member answers with its Cluster's ID holds: the
// member behind an unchanged endpoint is confirmed again after it, a changed endpoint at once.
const confirmAgain = 10 * time.Minute

// confirmation is what a Cluster's member was confirmed for (the spec's Credential) and when.
type confirmation struct {
	fields string
	at     time.Time
}

// confirmed holds, per Cluster UID, the last confirmation of its member in this process: every user of
// Config (status, execution, the proxy, service collection) shares it, so a member is asked once.
var confirmed sync.Map
