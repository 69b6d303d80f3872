// Package pgtest starts a real PostgreSQL server for a test: Debian's postgresql (initdb and
// postgres from /usr/lib/postgresql/VERSION/bin, installed by scripts/setup), in a temporary
// directory, on a free loopback port, fsync off, stopped and removed when the test ends. The
// server refuses to run as root: as root (CI) it runs as the postgres user (else nobody), its
// directory owned by that user.
package pgtest

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" driver
)

// binDir finds Debian's PostgreSQL server binaries: $PGTEST_BIN, else the newest
// /usr/lib/postgresql/*/bin holding postgres and initdb.
func binDir() (string, error) {
	if d := os.Getenv("PGTEST_BIN"); d != "" {
		return d, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool {
		vi, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[i])))
		vj, _ := strconv.Atoi(filepath.Base(filepath.Dir(dirs[j])))
		return vi > vj
	})
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "postgres")); err == nil {
			if _, err := os.Stat(filepath.Join(d, "initdb")); err == nil {
				return d, nil
			}
		}
	}
	return "", fmt.Errorf("no PostgreSQL server found in /usr/lib/postgresql/*/bin; run scripts/setup (it installs Debian's postgresql) or set PGTEST_BIN")
}

// Start starts a server and returns the URL of its database, for the test's lifetime.
func Start(t testing.TB) string {
	t.Helper()
	bin, err := binDir()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "pgtest-*")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	var cred *syscall.Credential
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			u, err = user.Lookup("nobody")
		}
		if err != nil {
			t.Fatalf("pgtest: running as root and no postgres or nobody user to run the server as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	run := func(name string, args ...string) *exec.Cmd {
		cmd := exec.Command(filepath.Join(bin, name), args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "LC_ALL=C")
		// A test process that is killed (or ends by its timeout's panic) runs no cleanup: the
		// server gets SIGQUIT (postgres's immediate shutdown) when it does, instead of staying on.
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGQUIT}
		return cmd
	}
	if out, err := run("initdb", "-D", data, "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync").CombinedOutput(); err != nil {
		t.Fatalf("pgtest: initdb: %v\n%s", err, out)
	}
	port := freePort(t)
	srv := run("postgres", "-D", data, "-k", dir, "-p", strconv.Itoa(port), "-h", "127.0.0.1",
		"-F", "-c", "max_connections=200", "-c", "full_page_writes=off", "-c", "synchronous_commit=off")
	logf, err := os.Create(filepath.Join(dir, "server.log"))
	if err != nil {
		t.Fatal(err)
	}
	srv.Stdout, srv.Stderr = logf, logf
	if err := srv.Start(); err != nil {
		t.Fatalf("pgtest: postgres: %v", err)
	}
	exited := make(chan struct{})
	go func() { srv.Wait(); close(exited) }()
	t.Cleanup(func() {
		srv.Process.Signal(syscall.SIGINT) // fast shutdown
		select {
		case <-exited:
		case <-time.After(30 * time.Second):
			srv.Process.Kill()
			<-exited
		}
		logf.Close()
	})
	url := fmt.Sprintf("postgres://postgres@127.0.0.1:%d/postgres?sslmode=disable", port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		db, err := sql.Open("pgx", url)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			err = db.PingContext(ctx)
			cancel()
			db.Close()
		}
		if err == nil {
			return url
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("pgtest: postgres exited:\n%s", log)
		default:
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(dir, "server.log"))
			t.Fatalf("pgtest: postgres not ready after 60s: %v\n%s", err, log)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
