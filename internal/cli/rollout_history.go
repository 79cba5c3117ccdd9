package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"

	workv1alpha1 "github.com/flotilla-io/flotilla/api/work/v1alpha1"
	"github.com/flotilla-io/flotilla/internal/rollout"
)

// annotationChangeCause on a template says why it changed, as kubectl rollout history shows it.
const annotationChangeCause = "kubernetes.io/change-cause"

// historyEntry is one revision as flotilla rollout history lists it.
type historyEntry struct {
	Revision    int64  `json:"revision"`
	Hash        string `json:"hash"`
	ChangeCause string `json:"changeCause,omitempty"`
	// Rollout says whether the revision is the rollout's target, its stable revision, both or neither.
	Rollout string `json:"rollout,omitempty"`
}

// history lists revisions as entries, marking the binding's target and stable revisions.
func history(revs []appsv1.ControllerRevision, status *workv1alpha1.RolloutStatus) []historyEntry {
	entries := make([]historyEntry, 0, len(revs))
	for i := range revs {
		e := historyEntry{Revision: revs[i].Revision, Hash: revs[i].Labels[rollout.LabelHash]}
		if rev, err := rollout.Decode(&revs[i]); err != nil {
			e.ChangeCause = "(unreadable: " + err.Error() + ")"
		} else if meta, ok := rev.Template["metadata"].(map[string]any); ok {
			if annotations, ok := meta["annotations"].(map[string]any); ok {
				e.ChangeCause, _ = annotations[annotationChangeCause].(string)
			}
		}
		var roles []string
		if status != nil && status.TargetHash != "" && status.TargetHash == e.Hash {
			roles = append(roles, "target")
		}
		if status != nil && status.StableHash != "" && status.StableHash == e.Hash {
			roles = append(roles, "stable")
		}
		e.Rollout = strings.Join(roles, ",")
		entries = append(entries, e)
	}
	return entries
}

func printHistory(out io.Writer, name string, entries []historyEntry) error {
	fmt.Fprintf(out, "%s\n", name)
	t := newTable("Revision", "Hash", "Rollout", "Change-Cause")
	for _, e := range entries {
		addRow(t, nil, strconv.FormatInt(e.Revision, 10), orDash(e.Hash), orDash(e.Rollout), orDash(e.ChangeCause))
	}
	return listOutput{}.tablePrinter().PrintObj(t, out)
}

// revisionNumbered returns the revision numbered n, or an error listing the numbers there are.
func revisionNumbered(revs []appsv1.ControllerRevision, n int64) (*appsv1.ControllerRevision, error) {
	have := make([]string, 0, len(revs))
	for i := range revs {
		if revs[i].Revision == n {
			return &revs[i], nil
		}
		have = append(have, fmt.Sprint(revs[i].Revision))
	}
	return nil, fmt.Errorf("no revision %d: there are revisions %s", n, strings.Join(have, ", "))
}

func newRolloutHistoryCommand() *cobra.Command {
	f := &rolloutFlags{}
	var revision int64
	var output string
	cmd := &cobra.Command{
		Use:   "history KIND/NAME",
		Short: "List the revisions of a template the hub keeps, or show one",
		Long: "Lists the revisions the hub keeps of a template (ControllerRevisions next to it), oldest first, with\n" +
			"each one's kubernetes.io/change-cause annotation and which is the rollout's target and stable revision.\n" +
			"--revision prints that revision's template.",
		Example: "  flotilla rollout history deployment/web -n shop\n  flotilla rollout history deployment/web --revision 2",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch output {
			case "", "yaml", "json":
			default:
				return fmt.Errorf("--output %q: want yaml or json", output)
			}
			if revision < 0 {
				return fmt.Errorf("--revision %d: want a revision number", revision)
			}
			t, err := f.resolve(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			revs, err := t.revisions(cmd.Context())
			if err != nil {
				return err
			}
			if revision > 0 {
				cr, err := revisionNumbered(revs, revision)
				if err != nil {
					return fmt.Errorf("%s: %w", t, err)
				}
				rev, err := rollout.Decode(cr)
				if err != nil {
					return err
				}
				return printObject(cmd.OutOrStdout(), output, rev.Template)
			}
			entries := history(revs, t.binding.BindingStatus().Rollout)
			if output != "" {
				return printObject(cmd.OutOrStdout(), output, entries)
			}
			return printHistory(cmd.OutOrStdout(), t.name(), entries)
		},
	}
	f.add(cmd)
	cmd.Flags().Int64Var(&revision, "revision", 0, "print the template of this revision")
	cmd.Flags().StringVarP(&output, "output", "o", "", "print as yaml or json")
	return cmd
}
