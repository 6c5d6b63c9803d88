package report

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat times: 100 on every
// Linux architecture kube-aws builds for.
const clockTicks = 100

// MachineStart is when the machine's PID 1 started, read from proc (/proc
// on a machine). On a virtual machine that is its boot, a second or two
// after the kernel's; in a container machine (systemd-nspawn) it is the
// container's start, where the host's uptime would be wrong.
func MachineStart(proc string, now time.Time) (time.Time, error) {
	up, err := os.ReadFile(filepath.Join(proc, "uptime"))
	if err != nil {
		return time.Time{}, err
	}
	f := strings.Fields(string(up))
	if len(f) == 0 {
		return time.Time{}, fmt.Errorf("%s/uptime is empty", proc)
	}
	uptime, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s/uptime: %v", proc, err)
	}
	stat, err := os.ReadFile(filepath.Join(proc, "1", "stat"))
	if err != nil {
		return time.Time{}, err
	}
	// Fields after the command name, which may hold spaces and ")":
	// starttime is the 22nd field of the line, the 20th after it.
	s := string(stat)
	rest := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(rest) < 20 {
		return time.Time{}, fmt.Errorf("%s/1/stat: unexpected %q", proc, s)
	}
	ticks, err := strconv.ParseInt(rest[19], 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s/1/stat: %v", proc, err)
	}
	since := uptime - float64(ticks)/clockTicks
	if since < 0 {
		since = 0
	}
	return now.Add(-time.Duration(since * float64(time.Second))), nil
}
