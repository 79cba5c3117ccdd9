package cli

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"sigs.k8s.io/controller-runtime/pkg/client"
	mcsv1alpha1 "sigs.k8s.io/mcs-api/pkg/apis/v1alpha1"

	"github.com/flotilla-io/flotilla/internal/mcs"
)

// printServiceExportStatus prints an export for flotilla status: its conditions, then each provider with the
// endpoints it reports and whether they are imported, and each consumer with the endpoints it was given.
func printServiceExportStatus(ctx context.Context, out io.Writer, c client.Reader, key client.ObjectKey) error {
	export := &mcsv1alpha1.ServiceExport{}
	if err := c.Get(ctx, key, export); err != nil {
		return err
	}
	rows, err := mcs.Summarize(ctx, c, export)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "ServiceExport/%s in %s\n", export.Name, export.Namespace)
	for _, cond := range export.Status.Conditions {
		fmt.Fprintf(out, "  %s=%s  %s  %s\n", cond.Type, cond.Status, cond.Reason, cond.Message)
	}
	w := tabwriter.NewWriter(out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(w, "CLUSTER\tROLE\tENDPOINTS\tSTATE")
	for _, r := range rows {
		fmt.Fprintf(w, "%s\t%s\t%d\t%s\n", r.Cluster, r.Role, r.Endpoints, r.State)
	}
	return w.Flush()
}
