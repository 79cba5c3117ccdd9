// Command flotilla is the Flotilla hub, agent and command line in one binary.
package main

import (
	"os"

	"github.com/flotilla-io/flotilla/internal/cli/planecmd"
)

func main() { os.Exit(planecmd.Execute(os.Args[1:])) }
