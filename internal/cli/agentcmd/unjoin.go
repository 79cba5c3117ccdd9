package agentcmd

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/flotilla-io/flotilla/internal/registration"
)

// unjoinOptions are the flags of flotilla unjoin.
type unjoinOptions struct {
	hub              cmdutil.HubFlags
	deleteResources  bool
	timeout          time.Duration
	uninstall        bool
	memberKubeconfig string
	memberContext    string
	install          installOptions
	dryRun           cmdutil.DryRun
}

func (o *unjoinOptions) validate() error {
	if o.timeout <= 0 {
		return fmt.Errorf("--timeout %s: must be positive", o.timeout)
	}
	if o.memberContext != "" && o.memberKubeconfig == "" {
		return errors.New("--cluster-context needs --cluster-kubeconfig: the kubeconfig the context is in")
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

Unjoin records on the Cluster what becomes of the objects Flotilla placed in the member, deletes the
Cluster, and shows the hub's steps until the cluster is gone: the hub does the removal (a Cluster deleted
with kubectl goes the same way, keeping the member objects), and finishes it even if this command stops.

The objects Flotilla placed in the member stay there and keep running: the cluster's Works are released, so
neither a stopped agent nor a lost push credential holds the unjoin up. They keep Flotilla's labels, so when
the cluster joins again under the same name Flotilla takes them over again without a conflict.

With --delete-resources the member objects are deleted first, by the cluster's agent (or, for a push
cluster, by the hub) and by the usual rules: objects Flotilla adopted, Namespaces, CRDs and
PersistentVolumeClaims stay unless their template opted in. The hub waits for that; the command fails after
--timeout if the agent does not do it, and unjoin without --delete-resources then leaves the objects in the
member and finishes.

Running unjoin again follows an unjoin that was interrupted.

--dry-run=client says what unjoin would mark and delete, and writes nothing; --dry-run=server has the hub
check the mark and the delete (and, with --uninstall, the member check each delete) without persisting them.
Neither follows a removal, since none starts.`,
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
			if err := unjoin(ctx, c, args[0], o.deleteResources, o.dryRun, cmd.OutOrStdout()); err != nil || !o.uninstall {
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
		cmd.Flags().StringVar(&o.memberContext, "cluster-context", "", "context of --cluster-kubeconfig that reaches the member (default: its current context)")
		o.install.addTargetFlags(cmd.Flags())
	}
	cmdutil.AddDryRunFlag(cmd.Flags(), &o.dryRun, "what unjoin would mark and delete")
	cmd.Flags().DurationVar(&o.timeout, "timeout", 5*time.Minute, "how long to follow the hub's removal of the cluster (the member objects deleted, the cluster's namespace gone)")
	return cmd
}

// unjoin asks the hub to remove cluster name and shows how it goes: it records on the Cluster what becomes of
// the member objects (AnnotationUnjoin), deletes the Cluster, and prints each step of the hub's
// deregistration (the Cluster's Deleting condition) until the Cluster and its namespace are gone.
//
// A dry run stops after markAndDelete, which then writes nothing (client) or has the hub check its writes
// without persisting them (server).
func unjoin(ctx context.Context, c client.Client, name string, deleteResources bool, dryRun cmdutil.DryRun, out io.Writer) error {
	p := cmdutil.NewProgress(out)
	cluster := &clusterv1alpha1.Cluster{}
	err := c.Get(ctx, client.ObjectKey{Name: name}, cluster)
	switch {
	case apierrors.IsNotFound(err):
		// A Cluster deleted before the hub gave it its finalizer leaves its namespace behind for a while: the
		// hub releases its Works and the namespace goes.
		if err := c.Get(ctx, client.ObjectKey{Name: clusterv1alpha1.ClusterNamespace(name)}, &corev1.Namespace{}); apierrors.IsNotFound(err) {
			return fmt.Errorf("cluster %s is not registered", name)
		} else if err != nil {
			return err
		}
		if deleteResources {
			return fmt.Errorf("cluster %s is already gone from the hub, so its member objects can no longer be deleted through it; "+
				"run flotilla unjoin %s without --delete-resources to follow the rest of its removal", name, name)
		}
	case err != nil:
		return err
	default:
		if err := markAndDelete(ctx, c, cluster, deleteResources, dryRun, p); err != nil {
			return err
		}
	}
	if dryRun.Enabled() {
		return nil
	}
	if err := follow(ctx, c, name, p); err != nil {
		return err
	}
	if deleteResources {
		p.Step(fmt.Sprintf("cluster %s unjoined; the objects Flotilla placed in it were deleted", name))
	} else {
		p.Step(fmt.Sprintf("cluster %s unjoined; the objects Flotilla placed in it were left there (--delete-resources deletes them)", name))
	}
	return nil
}

// markAndDelete records on the Cluster what becomes of the member objects, then deletes it. A Cluster already
// being removed may still be told to keep them, never to delete them once it keeps them: its Works may be
// released already.
func markAndDelete(ctx context.Context, c client.Client, cluster *clusterv1alpha1.Cluster, deleteResources bool, dryRun cmdutil.DryRun, p *cmdutil.Progress) error {
	mode, what := clusterv1alpha1.UnjoinKeepResources, "keep"
	if deleteResources {
		mode, what = clusterv1alpha1.UnjoinDeleteResources, "delete"
	}
	current := cluster.Annotations[clusterv1alpha1.AnnotationUnjoin]
	switch {
	case deleteResources && cluster.DeletionTimestamp != nil && current != mode:
		return fmt.Errorf("cluster %s is already being removed keeping its member objects, so they can no longer be deleted through the hub; "+
			"run flotilla unjoin %s without --delete-resources to follow its removal", cluster.Name, cluster.Name)
	case deleteResources && !controllerutil.ContainsFinalizer(cluster, clusterv1alpha1.FinalizerDeregistration):
		// Without it the Cluster would go at once and its Works be released: nothing would be deleted.
		return fmt.Errorf("cluster %s has no %s finalizer: the hub's deregistration controller has not taken it in hand, "+
			"so --delete-resources cannot delete its member objects; is the hub running (its deregistration controller enabled)?",
			cluster.Name, clusterv1alpha1.FinalizerDeregistration)
	}
	if current != mode {
		if dryRun != cmdutil.DryRunClient {
			patch := client.MergeFrom(cluster.DeepCopy())
			metav1.SetMetaDataAnnotation(&cluster.ObjectMeta, clusterv1alpha1.AnnotationUnjoin, mode)
			if err := c.Patch(ctx, cluster, patch, &client.PatchOptions{DryRun: dryRun.Options()}); err != nil {
				return err
			}
		}
		p.Step(fmt.Sprintf("cluster %s: marked to %s the objects Flotilla placed in it%s", cluster.Name, what, dryRun.Suffix()))
	}
	if cluster.DeletionTimestamp == nil {
		if dryRun != cmdutil.DryRunClient {
			if err := client.IgnoreNotFound(c.Delete(ctx, cluster, &client.DeleteOptions{DryRun: dryRun.Options()})); err != nil {
				return err
			}
		}
		p.Step(fmt.Sprintf("cluster %s: deleted; the hub takes it off%s", cluster.Name, dryRun.Suffix()))
	}
	if dryRun.Enabled() {
		return dryRunWorks(ctx, c, cluster.Name, deleteResources, p)
	}
	return nil
}

// follow prints each step of the hub's deregistration of cluster name, as its Deleting condition says it,
// until the Cluster and then its namespace (which goes after it) are gone. When ctx ends first, the error says
// what the hub waits for.
func follow(ctx context.Context, c client.Client, name string, p *cmdutil.Progress) error {
	ns := clusterv1alpha1.ClusterNamespace(name)
	var last *metav1.Condition
	clusterGone := false
	err := wait.PollUntilContextCancel(ctx, time.Second, true, func(ctx context.Context) (bool, error) {
		if !clusterGone {
			cluster := &clusterv1alpha1.Cluster{}
			err := c.Get(ctx, client.ObjectKey{Name: name}, cluster)
			if err == nil {
				if cond := meta.FindStatusCondition(cluster.Status.Conditions, clusterv1alpha1.ClusterConditionDeleting); cond != nil &&
					(last == nil || cond.Message != last.Message) {
					p.Step(fmt.Sprintf("cluster %s: %s", name, cond.Message))
					last = cond
				}
				return false, nil
			}
			if !apierrors.IsNotFound(err) {
				return false, err
			}
			clusterGone = true
			p.Step(fmt.Sprintf("cluster %s: gone from the hub; its namespace %s goes after it", name, ns))
		}
		err := c.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	switch {
	case !errors.Is(err, context.DeadlineExceeded):
		return err
	case !clusterGone && last != nil && last.Reason == registration.ReasonDeletingMemberObjects:
		return fmt.Errorf("cluster %s: the member objects were not deleted in time (%s); is the cluster's agent running "+
			"(for a push cluster: are its credentials valid)? The hub keeps waiting for them; run flotilla unjoin %s without "+
			"--delete-resources to leave the objects in the member", name, last.Message, name)
	case !clusterGone:
		return fmt.Errorf("cluster %s did not go in time; the hub keeps removing it, and flotilla unjoin %s follows it again", name, name)
	}
	return fmt.Errorf("cluster %s: namespace %s did not go in time; the hub keeps removing it, and flotilla unjoin %s follows it again", name, ns, name)
}

// dryRunWorks says, for a dry run, what the hub's removal would do with the Works of cluster name: delete the
// objects they placed in the member, or release them and leave the objects running.
func dryRunWorks(ctx context.Context, c client.Client, name string, deleteResources bool, p *cmdutil.Progress) error {
	works := &workv1alpha1.WorkList{}
	if err := c.List(ctx, works, client.InNamespace(clusterv1alpha1.ClusterNamespace(name))); err != nil {
		return err
	}
	what := "released, their objects left running in the member"
	if deleteResources {
		what = "deleted with the objects they placed in the member"
	}
	p.Step(fmt.Sprintf("cluster %s: %d Works would be %s", name, len(works.Items), what))
	for _, w := range works.Items {
		p.Step("  work " + w.Name)
	}
	return nil
}
