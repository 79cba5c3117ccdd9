package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/execution"
)

// unjoinOptions are the flags of flotilla unjoin.
type unjoinOptions struct {
	hub              cmdutil.HubFlags
	deleteResources  bool
	timeout          time.Duration
	uninstall        bool
	memberKubeconfig string
	install          installOptions
}

func (o *unjoinOptions) validate() error {
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be positive", o.timeout)
	}
	if o.uninstall {
		if o.memberKubeconfig == "" {
			return errors.New("--uninstall needs --cluster-kubeconfig: the member to remove the agent from")
		}
		return o.install.validate()
	}
	return nil
}

// NewUnjoinCommand is flotilla unjoin; installer, if not nil, adds --uninstall.
func NewUnjoinCommand(installer *Installer) *cobra.Command {
	o := &unjoinOptions{install: installOptions{installer: installer}}
	cmd := &cobra.Command{
		Use:   "unjoin NAME",
		Short: "Remove a cluster from the hub; what Flotilla placed in it stays there unless --delete-resources",
		Long: `Remove a cluster from the hub: its Cluster, namespace (with its Works and Lease), the RBAC of its
agent, whose certificate then opens nothing, and for a push cluster the stored credentials.

The objects Flotilla placed in the member stay there and keep running: the cluster's Works are released, so
neither a stopped agent nor a lost push credential holds the unjoin up. They keep Flotilla's labels, so when
the cluster joins again under the same name Flotilla takes them over again without a conflict.

With --delete-resources the member objects are deleted first, by the cluster's agent (or, for a push
cluster, by the hub) and by the usual rules: objects Flotilla adopted, Namespaces, CRDs and
PersistentVolumeClaims stay unless their template opted in. The command waits for that and fails after
--timeout if the agent does not do it, leaving the Cluster in place.

Running unjoin again finishes an unjoin that was interrupted.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.validate(); err != nil {
				return err
			}
			_, c, _, err := o.hub.Clients()
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), o.timeout)
			defer cancel()
			if err := unjoin(ctx, c, args[0], o.deleteResources, cmd.OutOrStdout()); err != nil || !o.uninstall {
				return err
			}
			return o.uninstallAgent(ctx, cmd.OutOrStdout())
		},
	}
	o.hub.AddFlags(cmd.Flags())
	cmd.Flags().BoolVar(&o.deleteResources, "delete-resources", false, "delete the objects Flotilla placed in the member before the cluster goes")
	if installer != nil {
		cmd.Flags().BoolVar(&o.uninstall, "uninstall", false, "then remove the agent flotilla join --install put in the member (its release's objects only; the namespace stays)")
		cmd.Flags().StringVar(&o.memberKubeconfig, "cluster-kubeconfig", "", "kubeconfig of the member, for --uninstall")
		o.install.addTargetFlags(cmd.Flags())
	}
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to wait for the member objects to be deleted and the cluster's namespace to go")
	return cmd
}

// unjoin removes cluster name from the hub. The Cluster is first marked with what becomes of the member
// objects (the executor reads it before it finalizes a Work), then, with deleteResources, the Works are
// deleted and their objects removed from the member; then the Cluster goes, and its Works are released so
// that its namespace goes too without an agent.
func unjoin(ctx context.Context, c client.Client, name string, deleteResources bool, out io.Writer) error {
	ns := clusterv1alpha1.ClusterNamespace(name)
	cluster := &clusterv1alpha1.Cluster{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, cluster)
	gone := apierrors.IsNotFound(err)
	if err != nil && !gone {
		return err
	}
	if gone {
		// An unjoin interrupted after the Cluster went leaves its namespace behind: finish it.
		if err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster %s is not registered", name)
		} else if err != nil {
			return err
		}
		if deleteResources {
			return fmt.Errorf("cluster %s is already gone from the hub, so its member objects can no longer be deleted through it; "+
				"run flotilla unjoin %s without --delete-resources to finish removing it", name, name)
		}
	}
	if !gone {
		mode := clusterv1alpha1.UnjoinKeepResources
		if deleteResources {
			mode = clusterv1alpha1.UnjoinDeleteResources
		}
		if cluster.Annotations[clusterv1alpha1.AnnotationUnjoin] != mode {
			patch := client.MergeFrom(cluster.DeepCopy())
			metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, clusterv1alpha1.AnnotationUnjoin, mode)
			if err := c.Patch(ctx, cluster, patch); err != nil {
				return err
			}
		}
		if deleteResources {
			if err := deleteMemberObjects(ctx, c, name, out); err != nil {
				return err
			}
		}
		if err := client.IgnoreNotFound(c.Delete(ctx, cluster)); err != nil {
			return err
		}
		if ref := cluster.Spec.SecretRef; ref != nil {
			secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name}}
			if err := client.IgnoreNotFound(c.Delete(ctx, secret)); err != nil {
				return err
			}
		}
	}
	fmt.Fprintf(out, "cluster %s: waiting for namespace %s to go\n", name, ns)
	err = wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if err := releaseWorks(ctx, c, ns); err != nil {
			return false, err
		}
		err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	if err != nil {
		return fmt.Errorf("cluster %s: namespace %s did not go: %w", name, ns, err)
	}
	if deleteResources {
		fmt.Fprintf(out, "cluster %s unjoined; the objects Flotilla placed in it were deleted\n", name)
	} else {
		fmt.Fprintf(out, "cluster %s unjoined; the objects Flotilla placed in it were left there (--delete-resources deletes them)\n", name)
	}
	return nil
}

// deleteMemberObjects deletes the cluster's Works and waits until the executor reports each one's member
// objects deleted (it keeps their finalizer meanwhile, so their bindings do not write them again).
func deleteMemberObjects(ctx context.Context, c client.Client, cluster string, out io.Writer) error {
	var waiting []string
	last := ""
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		works := &workv1alpha1.WorkList{}
		if err := c.List(ctx, works, client.InNamespace(clusterv1alpha1.ClusterNamespace(cluster))); err != nil {
			return false, err
		}
		waiting = waiting[:0]
		for i := range works.Items {
			w := &works.Items[i]
			if w.DeletionTimestamp == nil {
				if err := client.IgnoreNotFound(c.Delete(ctx, w)); err != nil {
					return false, err
				}
			}
			applied := meta.FindStatusCondition(w.Status.Conditions, workv1alpha1.WorkConditionApplied)
			if w.DeletionTimestamp == nil || applied == nil || applied.Reason != execution.ReasonDeleted {
				waiting = append(waiting, w.Name)
			}
		}
		progress := fmt.Sprintf("cluster %s: member objects of %d of %d Works deleted", cluster, len(works.Items)-len(waiting), len(works.Items))
		if progress != last {
			fmt.Fprintln(out, progress)
			last = progress
		}
		return len(waiting) == 0, nil
	})
	if errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("cluster %s: the member objects of Works %s were not deleted in time; is the cluster's agent running "+
			"(for a push cluster: are its credentials valid)? The cluster stays registered; run flotilla unjoin %s without "+
			"--delete-resources to leave the objects in the member", cluster, strings.Join(waiting, ", "), cluster)
	}
	return err
}

// releaseWorks removes the execution finalizer from the Works in namespace ns, which belongs to a cluster
// that is going: their member objects stay (or were deleted already), so there is nothing left for the
// finalizer to wait for, and no agent or push credential is needed for the Works to go.
func releaseWorks(ctx context.Context, c client.Client, ns string) error {
	works := &workv1alpha1.WorkList{}
	if err := c.List(ctx, works, client.InNamespace(ns)); err != nil {
		return err
	}
	for i := range works.Items {
		w := &works.Items[i]
		if !controllerutil.ContainsFinalizer(w, workv1alpha1.FinalizerExecution) {
			continue
		}
		patch := client.MergeFromWithOptions(w.DeepCopy(), client.MergeFromWithOptimisticLock{})
		controllerutil.RemoveFinalizer(w, workv1alpha1.FinalizerExecution)
		if err := c.Patch(ctx, w, patch); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err // a conflict is read again on the next round
		}
	}
	return nil
}
