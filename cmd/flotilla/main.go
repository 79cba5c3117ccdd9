// Command flotilla is the Flotilla hub, agent and command line in one binary.
package main

import (
	"os"

	"github.com/flotilla-io/flotilla/internal/cli"
)

func main() { os.Exit(cli.Execute(os.Args[1:])) }
