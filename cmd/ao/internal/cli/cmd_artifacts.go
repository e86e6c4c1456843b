package cli

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"text/tabwriter"

	"github.com/spf13/cobra"

	orchestrator "github.com/agentorchestrator/orchestrator"
)

// artifactKeeper is the coordinator as an [orchestrator.ArtifactKeeper].
func (e *env) artifactKeeper() (orchestrator.ArtifactKeeper, error) {
	coord, err := e.connect()
	if err != nil {
		return nil, err
	}
	k, ok := coord.(orchestrator.ArtifactKeeper)
	if !ok {
		return nil, fmt.Errorf("this coordinator keeps no artifacts")
	}
	return k, nil
}

func (e *env) artifactsCommand() *cobra.Command {
	c := &cobra.Command{
		Use:   "artifacts SESSION | artifacts get SESSION NAME [-o FILE]",
		Short: "List a session's artifacts (the files it produced), or download one",
		Long: `List the files a session produced, kept with it: name, size, content type and SHA-256.
ao artifacts get SESSION NAME writes one to standard output, or with -o to a file (- is standard output);
the download is checked against its SHA-256.`,
		Example: `  ao artifacts ses_01…
  ao artifacts get ses_01… reports/summary.md
  ao artifacts get ses_01… screenshots/home.png -o home.png`,
		Args: args(1, "one session id"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.listArtifacts(c.Context(), a[0])
		},
		ValidArgsFunction: e.completeSessions(sessionsAny),
	}
	var out string
	get := &cobra.Command{
		Use:   "get SESSION NAME [-o FILE]",
		Short: "Download one of a session's artifacts",
		Args:  args(2, "a session id and an artifact name"),
		RunE: func(c *cobra.Command, a []string) error {
			return e.getArtifact(c.Context(), a[0], a[1], out)
		},
	}
	get.Flags().StringVarP(&out, "output", "o", "-", "file to write (- is standard output)")
	c.AddCommand(get)
	return c
}

func (e *env) listArtifacts(ctx context.Context, session string) error {
	k, err := e.artifactKeeper()
	if err != nil {
		return err
	}
	list, err := k.ListArtifacts(ctx, session)
	if err != nil {
		return err
	}
	if e.json {
		writeJSON(e.app.Stdout, map[string]any{"artifacts": list})
		return nil
	}
	if len(list) == 0 {
		fmt.Fprintf(e.app.Stderr, "session %s has no artifacts\n", session)
		return nil
	}
	tw := tabwriter.NewWriter(e.app.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSIZE\tTYPE\tSHA256")
	for _, a := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", a.Name, byteSize(int(a.Size)), a.ContentType, a.SHA256[:min(12, len(a.SHA256))])
	}
	return tw.Flush()
}

func (e *env) getArtifact(ctx context.Context, session, name, out string) (err error) {
	if err := orchestrator.ValidArtifactName(name); err != nil {
		return usageErrorf("%v", err)
	}
	k, err := e.artifactKeeper()
	if err != nil {
		return err
	}
	a, body, err := k.OpenArtifact(ctx, session, name)
	if err != nil {
		return err
	}
	defer body.Close()
	w := e.app.Stdout
	if out != "-" {
		// Written beside the target and renamed into place once whole and checked, so that a failed
		// download never leaves a partial file under the name asked for.
		f, ferr := os.CreateTemp(filepath.Dir(out), ".ao-artifact-*")
		if ferr != nil {
			return ferr
		}
		defer func() {
			if err != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}()
		w = f
		defer func() {
			if err == nil {
				if err = f.Close(); err == nil {
					err = os.Rename(f.Name(), out)
				}
			}
		}()
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(w, h), body)
	if err != nil {
		return fmt.Errorf("downloading %s: %w", name, err)
	}
	if got := fmt.Sprintf("%x", h.Sum(nil)); got != a.SHA256 || n != a.Size {
		return fmt.Errorf("downloading %s: got %d bytes with SHA-256 %s, want %d bytes with %s", name, n, got, a.Size, a.SHA256)
	}
	if out != "-" {
		fmt.Fprintf(e.app.Stderr, "wrote %s (%s)\n", out, byteSize(int(n)))
	}
	return nil
}
