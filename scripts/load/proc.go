package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times; 100 on every
// Linux architecture Go supports.
const clockTicks = 100

// procStat is what the harness reads from /proc/<pid>/stat.
type procStat struct {
	ppid           int
	utime, stime   float64 // seconds
	cutime, cstime float64 // seconds, of children already waited for
}

func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procStat{}, err
	}
	// The command name is in parentheses and may hold spaces: split after it.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	f := strings.Fields(s[i+1:])
	// f[0] is field 3 (state); utime is field 14, so f[11].
	if len(f) < 15 {
		return procStat{}, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	num := func(k int) float64 {
		v, _ := strconv.ParseFloat(f[k], 64)
		return v / clockTicks
	}
	ppid, _ := strconv.Atoi(f[1])
	return procStat{ppid: ppid, utime: num(11), stime: num(12), cutime: num(13), cstime: num(14)}, nil
}

// cpuSeconds is a process's own user+system time.
func cpuSeconds(pid int) float64 {
	st, err := readStat(pid)
	if err != nil {
		return 0
	}
	return st.utime + st.stime
}

// treeCPUSeconds is the CPU time of a process and all its children, live and
// exited: the live ones from their own stat, the exited ones from the
// parent's cutime/cstime. PostgreSQL forks a backend per connection, so this
// counts the postmaster, every backend and the background workers.
func treeCPUSeconds(root int) float64 {
	st, err := readStat(root)
	if err != nil {
		return 0
	}
	total := st.utime + st.stime + st.cutime + st.cstime
	for _, pid := range children(root) {
		total += cpuSeconds(pid)
	}
	return total
}

// children lists the pids whose parent is ppid.
func children(ppid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err == nil && st.ppid == ppid {
			out = append(out, pid)
		}
	}
	return out
}

// currentRSS is VmRSS from /proc/<pid>/status, in bytes.
func currentRSS(pid int) int64 { return statusKB(pid, "VmRSS:") * 1024 }

// peakRSS is VmHWM from /proc/<pid>/status, in bytes.
func peakRSS(pid int) int64 { return statusKB(pid, "VmHWM:") * 1024 }

// statusKB reads one "Name:   123 kB" line of /proc/<pid>/status; 0 if absent.
func statusKB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field); ok {
			fs := strings.Fields(v)
			if len(fs) > 0 {
				kb, _ := strconv.ParseInt(fs[0], 10, 64)
				return kb
			}
		}
	}
	return 0
}

// postmasterPID reads the first line of pgdata/postmaster.pid.
func postmasterPID(pgdata string) (int, error) {
	b, err := os.ReadFile(filepath.Join(pgdata, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

// loadAvg is the 1-minute load average from /proc/loadavg.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}
