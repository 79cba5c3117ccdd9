package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/cli/agentcmd"
	"github.com/flotilla-io/flotilla/internal/registration"
)

func newAcceptCommand(accept bool) *cobra.Command {
	var hub agentcmd.HubFlags
	var message, request string
	use, short, done := "accept NAME", "Accept a cluster's pending join (hubs with --require-approval, or a name already registered)", "accepted"
	if !accept {
		use, short, done = "deny NAME", "Deny a cluster's pending joins", "denied"
	}
	cmd := &cobra.Command{
		Use: use, Short: short, Args: cobra.ExactArgs(1),
		Long: short + `.

Accepting needs exactly one pending request for the name: with several, accept lists each request's
requester, cluster ID and labels, and --request names the one to accept. An accepted join keeps every label
and location it asked for. Accepting a join for a registered name re-registers it to the new agent when it
presents the same cluster ID; the previous agent's certificate loses its rights.`,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, c, _, err := hub.Clients()
			if err != nil {
				return err
			}
			if message == "" {
				message = "the hub administrator " + done + " the join of cluster " + args[0]
			}
			n, err := registration.Decide(cmd.Context(), c, args[0], request, accept, message)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s: %d join request(s) %s\n", args[0], n, done)
			return nil
		},
	}
	hub.AddFlags(cmd.Flags())
	cmd.Flags().StringVar(&message, "message", "", "message the agent prints")
	cmd.Flags().StringVar(&request, "request", "", "name of the one join request (CSR) to decide")
	return cmd
}
