// Package process runs child processes of Flotilla (hubs, members, agents) so that none outlives its parent:
// each child runs in its own process group, the kernel kills it when the parent dies however it dies, and
// Kill ends the whole group.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Process is a running child.
type Process struct {
	// Name labels the process in messages.
	Name string
	// LogPath receives the child's stdout and stderr.
	LogPath string

	cmd  *exec.Cmd
	done chan struct{}
	mu   sync.Mutex
	err  error
}

// Start runs binary with args, its output written to logPath (from the start of the file).
func Start(name, logPath string, env []string, binary string, args ...string) (*Process, error) {
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogPath: logPath, cmd: cmd, done: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		logFile.Close()
		p.mu.Lock()
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

// Renice sets the niceness of every process and thread in the child's process group; those it starts later
// inherit it. Raising a niceness needs no privilege.
func (p *Process) Renice(nice int) error {
	return syscall.Setpriority(syscall.PRIO_PGRP, p.cmd.Process.Pid, nice)
}

// Signal sends sig to the child's process group.
func (p *Process) Signal(sig syscall.Signal) error { return syscall.Kill(-p.cmd.Process.Pid, sig) }

// Kill sends SIGKILL to the process group and waits for the child to exit.
func (p *Process) Kill() {
	_ = p.Signal(syscall.SIGKILL)
	<-p.done
}

// Stop asks the child to shut down (SIGTERM) and kills it if it has not exited after grace.
func (p *Process) Stop(grace time.Duration) error {
	_ = p.Signal(syscall.SIGTERM)
	if err := p.Wait(grace); err != nil && !p.Exited() {
		p.Kill()
		return err
	}
	return nil
}

// Wait waits up to timeout for the child to exit and returns its exit error (nil for exit code 0).
func (p *Process) Wait(timeout time.Duration) error {
	select {
	case <-p.done:
		p.mu.Lock()
		defer p.mu.Unlock()
		return p.err
	case <-time.After(timeout):
		return fmt.Errorf("%s still running after %s", p.Name, timeout)
	}
}

// Exited reports whether the child has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output returns what the child printed so far.
func (p *Process) Output() string {
	data, _ := os.ReadFile(p.LogPath)
	return string(data)
}

// WaitFor waits until p printed marker, failing with the end of its output when it exits first.
func WaitFor(ctx context.Context, p *Process, marker string) error {
	ticker := time.NewTicker(100 * time.Millisecond)
	defer ticker.Stop()
	timeout := time.After(3 * time.Minute)
	for !strings.Contains(p.Output(), marker) {
		if p.Exited() {
			lines := strings.Split(strings.TrimRight(p.Output(), "\n"), "\n")
			return fmt.Errorf("%s exited; its output (%s):\n%s", p.Name, p.LogPath, strings.Join(lines[max(0, len(lines)-20):], "\n"))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-timeout:
			return fmt.Errorf("%s did not print %q within 3 minutes; its output is in %s", p.Name, marker, p.LogPath)
		case <-ticker.C:
		}
	}
	return nil
}

// Usage is a process's CPU time and memory, read from /proc.
type Usage struct {
	// CPU is user plus system time so far.
	CPU time.Duration
	// RSS is the resident set size now; PeakRSS the most it ever was (VmHWM), in bytes.
	RSS, PeakRSS int64
	// RSSFile is the part of RSS backed by files (RssFile): the binary's pages and files mapped into memory,
	// such as an embedded etcd's database.
	RSSFile int64
}

// Usage reads the child's resource usage.
func (p *Process) Usage() (Usage, error) { return ReadUsage(p.cmd.Process.Pid) }

// ReadUsage reads the resource usage of process pid from /proc.
func ReadUsage(pid int) (Usage, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return Usage{}, err
	}
	// The command name (field 2) may hold spaces; the fields after it start behind its closing parenthesis.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 13 {
		return Usage{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return Usage{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	// Linux reports CPU time in clock ticks of 1/100 s (USER_HZ) on every architecture Go supports.
	u := Usage{CPU: time.Duration(utime+stime) * 10 * time.Millisecond}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Usage{}, err
	}
	for line := range strings.Lines(string(status)) {
		key, value, _ := strings.Cut(line, ":")
		var target *int64
		switch key {
		case "VmRSS":
			target = &u.RSS
		case "VmHWM":
			target = &u.PeakRSS
		case "RssFile":
			target = &u.RSSFile
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		if err != nil {
			return Usage{}, fmt.Errorf("/proc/%d/status %s: %w", pid, key, err)
		}
		*target = kb * 1024
	}
	return u, nil
}
