// Command kubectl-flotilla is Flotilla's kubectl plugin: the users' verbs of flotilla (get, describe, status,
// rollout, token, kubeconfig ...) without the control plane, so `kubectl flotilla get clusters` works from
// any machine with kubectl and a kubeconfig of the hub.
package main

import (
	"os"

	"github.com/flotilla-io/flotilla/internal/cli"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

func main() { os.Exit(cmdutil.Execute(cli.NewPluginRoot(), os.Args[1:])) }
