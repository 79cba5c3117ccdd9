package registration

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	addonv1alpha1 "github.com/flotilla-io/flotilla/api/addon/v1alpha1"
	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/members"
)

// SetupAgentAddOnCredentials adds to an agent's manager (whose cache holds its cluster's namespace) the add-on
// credentials of its cluster, requested with hubConfig, the agent's own identity, whose certificates last
// agentTTL and are renewed renewBefore their expiry (0: with a fifth of their life left). The credential
// Secrets already in member are looked at when it starts.
func SetupAgentAddOnCredentials(mgr ctrl.Manager, hubConfig *rest.Config, member kubernetes.Interface, cluster string, agentTTL, renewBefore time.Duration) error {
	csrs, err := kubernetes.NewForConfig(hubConfig)
	if err != nil {
		return err
	}
	r := &AddOnCredentials{Hub: mgr.GetClient(), CSRs: csrs, TTL: AddOnCertTTL(agentTTL), RenewBefore: renewBefore,
		Recorder: mgr.GetEventRecorder("flotilla-agent"),
		Member: func(_ context.Context, name string) (kubernetes.Interface, error) {
			if name != cluster {
				return nil, nil
			}
			return member, nil
		},
		HubEndpoint: func(context.Context) (string, []byte, error) { return hubConfig.Host, hubConfig.CAData, nil },
	}
	inMember := source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		reqs, err := CredentialsInMember(ctx, member, cluster)
		if err != nil {
			// The ClusterAddOns still come; a Secret whose ClusterAddOn went while the agent was away waits
			// for the next period's manager.
			ctrl.LoggerFrom(ctx).Error(err, "listing add-on credentials in the member")
		}
		for _, req := range reqs {
			q.Add(req)
		}
		return nil
	})
	// The agent's manager is made again with each certificate: the controller's name is used again.
	return ctrl.NewControllerManagedBy(mgr).Named("addon-credentials").
		For(&addonv1alpha1.ClusterAddOn{}, builder.WithPredicates(credentialChanged)).
		WatchesRawSource(inMember).
		WithOptions(controller.Options{SkipNameValidation: ptr.To(true)}).
		Complete(r)
}

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=create;get
// +kubebuilder:rbac:groups=cluster.flotilla.io,resources=clusters,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=kube-public,resources=configmaps,verbs=get
// +kubebuilder:rbac:groups="",namespace=flotilla-system,resources=secrets,verbs=get

// SetupPushAddOnCredentials registers the hub's add-on credentials of Push clusters: the hub requests the
// certificates as itself, with keys made in its process and written only to the member, through the member
// client of internal/members. Certificates are asked for AddOnCertTTL(maxAgentCertTTL).
func SetupPushAddOnCredentials(mgr ctrl.Manager, maxAgentCertTTL time.Duration) error {
	csrs, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return err
	}
	newClient := func(_ string, cfg *rest.Config) (kubernetes.Interface, error) { return kubernetes.NewForConfig(cfg) }
	memberClients := members.NewCache(members.FromSecrets(mgr.GetAPIReader()), newClient, nil)
	hub := mgr.GetClient()
	r := &AddOnCredentials{Hub: hub, CSRs: csrs, TTL: AddOnCertTTL(maxAgentCertTTL), Recorder: mgr.GetEventRecorder("flotilla-registration"),
		Member: func(ctx context.Context, name string) (kubernetes.Interface, error) {
			cluster := &clusterv1alpha1.Cluster{}
			err := hub.Get(ctx, client.ObjectKey{Name: name}, cluster)
			if apierrors.IsNotFound(err) || (err == nil && cluster.Spec.SyncMode != clusterv1alpha1.Push) {
				return nil, nil // a cluster gone, or whose agent keeps its add-ons' credentials
			} else if err != nil {
				return nil, err
			}
			return memberClients.Get(ctx, cluster)
		},
		HubEndpoint: func(ctx context.Context) (string, []byte, error) { return PublishedEndpoint(ctx, mgr.GetAPIReader()) },
	}
	return ctrl.NewControllerManagedBy(mgr).Named("addon-push-credentials").
		For(&addonv1alpha1.ClusterAddOn{}, builder.WithPredicates(credentialChanged)).
		Complete(r)
}

// credentialChanged passes the ClusterAddOn changes that change its credential: its creation and deletion,
// its registrations and install namespace; not its conditions.
var credentialChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*addonv1alpha1.ClusterAddOn), e.ObjectNew.(*addonv1alpha1.ClusterAddOn)
	return o == nil || n == nil || (o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil) ||
		o.Status.Namespace != n.Status.Namespace || !reflect.DeepEqual(o.Status.Registrations, n.Status.Registrations)
}}

// PublishedEndpoint returns the hub's address and CA as it publishes them for agents (EnsureHubObjects): what
// a member reaches the hub with.
func PublishedEndpoint(ctx context.Context, reader client.Reader) (string, []byte, error) {
	cm := &corev1.ConfigMap{}
	if err := reader.Get(ctx, client.ObjectKey{Namespace: ClusterInfoNamespace, Name: ClusterInfoName}, cm); err != nil {
		return "", nil, fmt.Errorf("reading the hub's address for agents (%s/%s): %w", ClusterInfoNamespace, ClusterInfoName, err)
	}
	cfg, err := clientcmd.Load([]byte(cm.Data["kubeconfig"]))
	if err != nil {
		return "", nil, fmt.Errorf("the hub's address for agents (%s/%s): %w", ClusterInfoNamespace, ClusterInfoName, err)
	}
	for _, c := range cfg.Clusters {
		return c.Server, c.CertificateAuthorityData, nil
	}
	return "", nil, errors.New("the hub publishes no address for agents")
}
