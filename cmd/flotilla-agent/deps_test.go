package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
)

// forbidden are the import path prefixes the agent must not link: every embedded control-plane component
// lives in k8s.io/kubernetes (kube-apiserver, kube-controller-manager, kube-scheduler) or under them, etcd's
// server, kwok's simulated nodes, and Flotilla's own packages that start or drive control planes. Helm's SDK
// is kept out too: only flotilla installs agents (join --install), and it would double the agent's size.
var forbidden = []string{
	"k8s.io/kubernetes/",
	"k8s.io/apiserver/pkg/server",
	"go.etcd.io/etcd/server/",
	"sigs.k8s.io/kwok/",
	"helm.sh/helm/",
	"github.com/flotilla-io/flotilla/internal/controlplane",
	"github.com/flotilla-io/flotilla/internal/hub",
	"github.com/flotilla-io/flotilla/internal/devenv",
	"github.com/flotilla-io/flotilla/internal/bench",
	"github.com/flotilla-io/flotilla/internal/helmchart",
}

// TestAgentLinksNoControlPlane keeps flotilla-agent small: a forbidden package in its dependencies fails with
// the chain of imports that brought it in.
func TestAgentLinksNoControlPlane(t *testing.T) {
	graph, err := importGraph(".")
	if err != nil {
		t.Fatal(err)
	}
	for _, chain := range forbiddenChains(graph, "github.com/flotilla-io/flotilla/cmd/flotilla-agent") {
		t.Errorf("flotilla-agent links %s through\n  %s", chain[len(chain)-1], strings.Join(chain, "\n  -> "))
	}
}

// importGraph returns each package's imports among the dependencies of the package in dir (go list -deps).
func importGraph(dir string) (map[string][]string, error) {
	cmd := exec.Command("go", "list", "-deps", "-json=ImportPath,Imports", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, errors.New("go list: " + err.Error() + ": " + stderr.String())
	}
	graph := map[string][]string{}
	for dec := json.NewDecoder(bytes.NewReader(out)); ; {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return graph, nil
		} else if err != nil {
			return nil, err
		}
		graph[p.ImportPath] = p.Imports
	}
}

// forbiddenChains walks the graph breadth first from root and returns, for each forbidden package reached
// first (its own imports are not followed), the shortest import chain from root to it.
func forbiddenChains(graph map[string][]string, root string) [][]string {
	parent := map[string]string{root: ""}
	var chains [][]string
	for queue := []string{root}; len(queue) > 0; queue = queue[1:] {
		pkg := queue[0]
		if isForbidden(pkg) {
			var chain []string
			for p := pkg; p != ""; p = parent[p] {
				chain = append([]string{p}, chain...)
			}
			chains = append(chains, chain)
			continue
		}
		for _, imp := range graph[pkg] {
			if _, seen := parent[imp]; !seen {
				parent[imp] = pkg
				queue = append(queue, imp)
			}
		}
	}
	return chains
}

func isForbidden(pkg string) bool {
	for _, prefix := range forbidden {
		if strings.HasPrefix(pkg+"/", prefix) {
			return true
		}
	}
	return false
}
