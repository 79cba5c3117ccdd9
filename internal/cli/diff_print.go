package cli

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/pmezard/go-difflib/difflib"

	"github.com/flotilla-io/flotilla/internal/selection"
)

// printPreviews prints what the change does to each template: its policy when that changes, the clusters it
// gains (+) and loses (-), replicas that change, and a unified diff of each cluster's manifest that changes.
func printPreviews(out io.Writer, previews []templatePreview) error {
	if len(previews) == 0 {
		fmt.Fprintln(out, "no template is touched by these objects")
		return nil
	}
	for i, p := range previews {
		if i > 0 {
			fmt.Fprintln(out)
		}
		if err := printPreview(out, p); err != nil {
			return err
		}
	}
	return nil
}

func printPreview(out io.Writer, p templatePreview) error {
	b, a := p.before, p.after
	fmt.Fprintf(out, "%s: %s\n", p.name, policyChange(b.policy, a.policy))
	if a.note != "" {
		fmt.Fprintf(out, "  note: %s\n", a.note)
	}
	if a.err != nil {
		fmt.Fprintf(out, "! cannot be placed: %v (it stays where it is)\n", a.err)
		return nil
	}
	replicas := func(pl placement) map[string]int32 {
		m := map[string]int32{}
		for _, t := range pl.targets {
			m[t.Name] = t.Replicas
		}
		return m
	}
	was, will := replicas(b), replicas(a)
	var names []string
	for n := range was {
		names = append(names, n)
	}
	for n := range will {
		if _, ok := was[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	changed := false
	for _, n := range names {
		before, inBefore := was[n]
		after, inAfter := will[n]
		switch {
		case !inBefore:
			fmt.Fprintf(out, "+ cluster %s%s\n", n, replicaNote(after))
		case !inAfter:
			fmt.Fprintf(out, "- cluster %s%s\n", n, replicaNote(before))
		case before != after:
			fmt.Fprintf(out, "~ cluster %s: replicas %d -> %d\n", n, before, after)
		default:
			if b.manifests[n] == a.manifests[n] {
				continue
			}
		}
		changed = true
	}
	for _, n := range names {
		if _, ok := will[n]; !ok || b.manifests[n] == a.manifests[n] {
			continue
		}
		from := n + "/" + p.name
		if b.manifests[n] == "" {
			from = "/dev/null"
		}
		diff, err := difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
			A: lines(b.manifests[n]), B: lines(a.manifests[n]),
			FromFile: from, ToFile: n + "/" + p.name, Context: 3,
		})
		if err != nil {
			return err
		}
		fmt.Fprint(out, diff)
	}
	if !changed && a.policy != nil {
		fmt.Fprintln(out, "  no change to its clusters or their manifests")
	}
	return nil
}

func replicaNote(n int32) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (replicas %d)", n)
}

// lines splits YAML into lines, each with its newline (difflib.SplitLines adds an empty last line).
func lines(s string) []string {
	out := strings.SplitAfter(s, "\n")
	if out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

// policyChange says which policy places the template, before and after.
func policyChange(before, after *selection.Propagation) string {
	switch {
	case before == nil && after == nil:
		return "no policy places it"
	case after == nil:
		return "no policy places it any more (was " + policyName(before) + ")"
	case before == nil:
		return "placed by " + policyName(after) + " (no policy placed it)"
	case policyName(before) != policyName(after):
		return "placed by " + policyName(after) + " (was " + policyName(before) + ")"
	}
	return "placed by " + policyName(after)
}

func policyName(p *selection.Propagation) string {
	if p.Cluster() {
		return "ClusterPropagationPolicy " + p.Name
	}
	return "PropagationPolicy " + p.Namespace + "/" + p.Name
}
