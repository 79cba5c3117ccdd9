package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

// newClusterSetBindCommand is flotilla clusterset bind (bind true) or unbind: it creates or deletes the
// ClusterSetBinding that grants a set to a namespace.
func newClusterSetBindCommand(bind bool) *cobra.Command {
	var hub cmdutil.HubFlags
	var namespace string
	var dryRun cmdutil.DryRun
	use, short := "bind SET -n NAMESPACE", "Grant a ClusterSet to a namespace: its policies may place on the set's clusters (needs create on clustersets/bind)"
	if !bind {
		use, short = "unbind SET -n NAMESPACE", "Take a ClusterSet back from a namespace (its workloads there leave the set's clusters gracefully)"
	}
	cmd := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if namespace == "" {
				return fmt.Errorf("--namespace is required: the namespace the ClusterSet is granted to")
			}
			if bad := validation.IsDNS1123Label(namespace); len(bad) > 0 {
				return fmt.Errorf("--namespace %q: %s", namespace, bad[0])
			}
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			ctx, out := cmd.Context(), cmd.OutOrStdout()
			b := &clusterv1alpha1.ClusterSetBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: args[0]},
				Spec: clusterv1alpha1.ClusterSetBindingSpec{ClusterSet: args[0]}}
			if !bind {
				if dryRun == cmdutil.DryRunClient {
					err = c.Get(ctx, client.ObjectKeyFromObject(b), b)
				} else {
					err = c.Delete(ctx, b, &client.DeleteOptions{DryRun: dryRun.Options()})
				}
				if apierrors.IsNotFound(err) {
					return fmt.Errorf("ClusterSet %s is not bound to namespace %s", args[0], namespace)
				} else if err != nil {
					return err
				}
				fmt.Fprintf(out, "clustersetbinding.cluster.flotilla.io/%s deleted from namespace %s%s\n", b.Name, namespace, dryRun.Suffix())
				return nil
			}
			// A client dry run reads whether the binding exists; the others create it (or have the server check it).
			if dryRun == cmdutil.DryRunClient {
				err = c.Get(ctx, client.ObjectKeyFromObject(b), &clusterv1alpha1.ClusterSetBinding{})
				if err == nil {
					fmt.Fprintf(out, "ClusterSet %s is already bound to namespace %s\n", args[0], namespace)
					return nil
				} else if !apierrors.IsNotFound(err) {
					return err
				}
			} else if err := c.Create(ctx, b, &client.CreateOptions{DryRun: dryRun.Options()}); apierrors.IsAlreadyExists(err) {
				fmt.Fprintf(out, "ClusterSet %s is already bound to namespace %s\n", args[0], namespace)
				return nil
			} else if err != nil {
				return err
			}
			fmt.Fprintf(out, "clustersetbinding.cluster.flotilla.io/%s created in namespace %s%s\n", b.Name, namespace, dryRun.Suffix())
			if err := c.Get(ctx, client.ObjectKey{Name: args[0]}, &clusterv1alpha1.ClusterSet{}); apierrors.IsNotFound(err) {
				fmt.Fprintf(out, "warning: ClusterSet %s does not exist yet: the binding grants no cluster until it does\n", args[0])
			}
			return nil
		},
	}
	hub.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&namespace, "namespace", "n", "", "the namespace the set is granted to (required)")
	cmdutil.AddDryRunFlag(cmd.Flags(), &dryRun, "what would change")
	return cmd
}
