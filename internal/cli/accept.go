package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	clusterv1alpha1 "github.com/flotilla-io/flotilla/api/cluster/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/registration"
)

func newAcceptCommand(accept bool) *cobra.Command {
	var hub cmdutil.HubFlags
	var message, request, narrow string
	use, short, done := "accept NAME", "Accept a cluster's pending join (hubs with --require-approval, or a name already registered)", "accepted"
	if !accept {
		use, short, done = "deny NAME", "Deny a cluster's pending joins", "denied"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		Long: short + `.

Accepting needs exactly one pending request for the name: with several, accept lists each request's
requester, cluster ID and labels, and --request names the one to accept. An accepted join keeps the location
it asked for and every label it asked for, or only those --labels names (--labels "" keeps none); accept
prints what the Cluster was granted. Accepting a join for a registered name re-registers it to the new agent
when it presents the same cluster ID; the previous agent's certificate loses its rights.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			var keep map[string]string
			if cmd.Flags().Changed("labels") {
				l, err := labels.ConvertSelectorToLabelsMap(narrow)
				if err != nil {
					return fmt.Errorf("--labels %q: %w", narrow, err)
				}
				keep = l
			}
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			if message == "" {
				message = "the hub administrator " + done + " the join of cluster " + args[0]
			}
			n, err := registration.Decide(cmd.Context(), c, args[0], request, accept, message, keep)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s: %d join request(s) %s\n", args[0], n, done)
			if !accept {
				return nil
			}
			cluster := &clusterv1alpha1.Cluster{}
			if err := c.Get(cmd.Context(), client.ObjectKey{Name: args[0]}, cluster); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "granted: %s\n", granted(cluster))
			return nil
		},
	}
	hub.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&message, "message", "", "message the agent prints")
	cmd.Flags().StringVar(&request, "request", "", "name of the one join request (CSR) to decide")
	if accept {
		cmd.Flags().StringVar(&narrow, "labels", "", "the only labels, of those the join asked for, the Cluster gets (k=v,k2=v2; \"\" for none)")
	}
	return cmd
}

// granted says what labels and location a Cluster carries: what accepting its join gave it.
func granted(c *clusterv1alpha1.Cluster) string {
	return fmt.Sprintf("labels %s; provider %s; region %s; zones %s",
		orDash(labels.Set(c.Labels).String()), orDash(c.Spec.Provider), orDash(c.Spec.Region), orDash(strings.Join(c.Spec.Zones, ",")))
}
