//go:build linux

package proc

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentorchestrator/orchestrator/executor/internal/proctest"
	"github.com/agentorchestrator/orchestrator/executor/isolation"
)

// nobody returns the user nobody, or skips the test when this process cannot run programs as it.
func nobody(t *testing.T) *isolation.User {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("running a program as another user needs root; CI runs the tests as root")
	}
	u, err := isolation.LookupUser("nobody")
	if err != nil {
		t.Skipf("no user nobody: %v", err)
	}
	if err := u.Check(); err != nil {
		t.Skip(err)
	}
	return u
}

// A program started with a User runs as that user, with its groups and HOME, and cannot read the
// environment of the runner's process.
func TestRunAsUser(t *testing.T) {
	t.Parallel()
	u := nobody(t)
	var out bytes.Buffer
	script := `id -u; id -g; echo "$HOME"; cat /proc/` + strconv.Itoa(os.Getpid()) + `/environ >/dev/null 2>&1 && echo environ-readable || echo environ-denied`
	x, err := Run(t.Context(), Spec{
		Path:   "/bin/sh",
		Args:   []string{"sh", "-c", script},
		Env:    Environ(isolation.Config{User: u}),
		Dir:    "/",
		Stdout: func(r io.Reader) { _, _ = io.Copy(&out, r) },
		User:   u,
	})
	if err != nil || !x.Success() {
		t.Fatalf("Run = %+v, %v; output %q", x, err, out.String())
	}
	want := strings.Join([]string{strconv.Itoa(int(u.UID)), strconv.Itoa(int(u.GID)), u.HomeDir, "environ-denied"}, "\n") + "\n"
	if out.String() != want {
		t.Errorf("output %q, want %q", out.String(), want)
	}
}

// Stopping a program that runs as another user still ends its whole group.
func TestRunAsUserStopped(t *testing.T) {
	t.Parallel()
	u := nobody(t)
	ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer cancel()
	x, err := Run(ctx, Spec{Path: "/bin/sh", Args: []string{"sh", "-c", "sleep 60 & sleep 60"}, Dir: "/", User: u, StopGrace: time.Second})
	if err != nil || x.End != Stopped {
		t.Fatalf("Run = %+v, %v; want Stopped", x, err)
	}
	proctest.RequireGroupGone(t, x.Pid)
}

func TestOpenOutput(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, []byte("{}"), 0o600); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(dir, "secret")
	if err := os.WriteFile(secret, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(secret, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}

	f, err := OpenOutput(regular, nil)
	if err != nil {
		t.Fatalf("OpenOutput(regular file): %v", err)
	}
	f.Close()
	if _, err := OpenOutput(link, nil); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("OpenOutput(symbolic link): error %v, want it refused as a symbolic link", err)
	}
	// A FIFO would block an open for reading until a writer comes: it must be refused at once.
	done := make(chan error, 1)
	go func() {
		f, err := OpenOutput(fifo, nil)
		if f != nil {
			f.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("OpenOutput(FIFO): error %v, want it refused", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("OpenOutput(FIFO) blocked")
	}
	// A file the program's user does not own (a hard link to the runner's file, say) is refused.
	other := &isolation.User{Username: "other", UID: uint32(os.Geteuid()) + 4242}
	if _, err := OpenOutput(regular, other); err == nil || !strings.Contains(err.Error(), "belongs to uid") {
		t.Errorf("OpenOutput of a file another user owns: error %v, want it refused", err)
	}
	if _, err := OpenOutput(filepath.Join(dir, "missing"), nil); !os.IsNotExist(err) {
		t.Errorf("OpenOutput(missing): error %v, want not-exist", err)
	}
}

func TestGiveTo(t *testing.T) {
	t.Parallel()
	u := nobody(t)
	dir := t.TempDir()
	if err := GiveTo(nil, dir); err != nil {
		t.Errorf("GiveTo(nil): %v", err)
	}
	if err := GiveTo(u, dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); st.Uid != u.UID || st.Gid != u.GID {
		t.Errorf("owner %d:%d, want %d:%d", st.Uid, st.Gid, u.UID, u.GID)
	}
}
