// Command flotilla-agent is the agent of a Flotilla member cluster alone: join, agent, unjoin and version,
// without the embedded control plane, so it is small enough to run as a pod in every member.
package main

import (
	"os"

	"github.com/flotilla-io/flotilla/internal/cli/agentcmd"
	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
)

func main() { os.Exit(cmdutil.Execute(agentcmd.NewRoot(), os.Args[1:])) }
