package planecmd

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/flotilla-io/flotilla/internal/cli/cmdutil"
	"github.com/flotilla-io/flotilla/internal/controlplane"
)

// newHubSnapshotCommand backs up and restores the embedded hub's etcd.
func newHubSnapshotCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a snapshot of the embedded hub's etcd, or restore one into a data directory",
		Long: `Save a snapshot of the embedded hub's etcd while the hub runs, or restore one into a data directory.

A snapshot holds every object of the hub; Secrets and Works are in it encrypted with
DATA_DIR/pki/encryption.key. Back up DATA_DIR/pki too, and keep it apart from the snapshots: a restore
needs the PKI of the hub the snapshot came from (its encryption key to read Secrets and Works, its CAs
that members and agents trust).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newSnapshotSaveCommand(), newSnapshotRestoreCommand())
	return cmd
}

func newSnapshotSaveCommand() *cobra.Command {
	var dataDir string
	cmd := &cobra.Command{
		Use:     "save FILE",
		Short:   "Write a snapshot of the running hub's etcd to FILE",
		Example: `  flotilla hub snapshot save /backup/hub-$(date +%F).db --data-dir /var/lib/flotilla/hub`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dataDir == "" {
				return errors.New("--data-dir is required: the directory of the running hub")
			}
			file := args[0]
			if _, err := os.Stat(file); err == nil {
				return fmt.Errorf("%s exists: a snapshot never overwrites a file; choose another name", file)
			}
			info, err := controlplane.SaveSnapshot(cmd.Context(), dataDir, file)
			if err != nil {
				return err
			}
			cmdutil.NewProgress(cmd.OutOrStdout()).Step(fmt.Sprintf("snapshot saved to %s: revision %d, %d keys, %d bytes; back up %s/pki too",
				file, info.Revision, info.Keys, info.Bytes, dataDir))
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "data directory of the running hub (its --data-dir)")
	return cmd
}

func newSnapshotRestoreCommand() *cobra.Command {
	var dataDir string
	var force bool
	cmd := &cobra.Command{
		Use:   "restore FILE",
		Short: "Make a snapshot the etcd data of a stopped hub's data directory",
		Long: `Make the snapshot in FILE the etcd data of DATA_DIR, for the hub's next start.

The hub must be stopped. DATA_DIR/pki must hold the PKI of the hub the snapshot came from (copy it first on
a new machine): Secrets and Works in the snapshot are encrypted with its encryption.key. Etcd data already
in DATA_DIR is replaced only with --force, and is then kept aside as DATA_DIR/etcd.before-restore-TIME.
Revisions are raised past any a client saw, so agents relist everything after the restore.`,
		Example: `  flotilla hub snapshot restore /backup/hub-2026-12-01.db --data-dir /var/lib/flotilla/hub --force`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dataDir == "" {
				return errors.New("--data-dir is required: the directory the hub will start on")
			}
			kept, err := controlplane.RestoreSnapshot(args[0], dataDir, force)
			if err != nil {
				return err
			}
			p := cmdutil.NewProgress(cmd.OutOrStdout())
			if kept != "" {
				p.Step("the etcd data it replaced is kept in " + kept)
			}
			p.Step(fmt.Sprintf("snapshot %s restored into %s; start the hub with --data-dir %s", args[0], dataDir, dataDir))
			return nil
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "data directory of the stopped hub")
	cmd.Flags().BoolVar(&force, "force", false, "replace etcd data already in the data directory (it is kept aside)")
	return cmd
}
