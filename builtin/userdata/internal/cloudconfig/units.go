package cloudconfig

import (
	"fmt"
	"path"
	"strings"

	"github.com/coreos/go-systemd/v22/unit"

	"github.com/kube-aws/kube-aws/core/construct"
	"github.com/kube-aws/kube-aws/core/diag"
)

// allowedSections are the sections systemd reads in a unit file; anything
// else is a typo that systemd would only log and ignore at boot, leaving the
// setting silently unapplied. X- sections are systemd's own extension point.
var allowedSections = map[string]bool{
	"Unit": true, "Service": true, "Install": true, "Socket": true, "Timer": true,
	"Mount": true, "Path": true, "Slice": true, "Scope": true, "Automount": true, "Swap": true,
}

// typeSection is the section each unit type is configured by; empty for the
// types that need none (a target groups units, a device is made by udev).
var typeSection = map[string]string{
	".service": "Service", ".socket": "Socket", ".timer": "Timer", ".mount": "Mount",
	".path": "Path", ".slice": "Slice", ".scope": "Scope", ".automount": "Automount",
	".swap": "Swap", ".target": "", ".device": "",
}

// CheckUnits parses every unit and drop-in the way systemd will: an unknown
// section, an unknown unit type or an enabled unit without an [Install]
// section (systemctl enable would refuse it) is fatal; a unit without the
// section its type is configured by is a warning, since systemd accepts it
// but it almost certainly is not what the author meant.
func CheckUnits(units []construct.Unit) diag.List {
	var diags diag.List
	for _, u := range units {
		// What is wrong with a unit is the plugin's that defined it (a
		// drop-in's, the plugin's that contributed the drop-in).
		diags = append(diags, about(checkUnit(u), u.Plugin)...)
	}
	return diags
}

// about names the plugin each diagnostic is about, where none is named yet.
func about(diags diag.List, plugin string) diag.List {
	for i := range diags {
		if diags[i].Plugin == "" {
			diags[i] = diags[i].About(plugin)
		}
	}
	return diags
}

func checkUnit(u construct.Unit) diag.List {
	var diags diag.List
	where := unitPath(u)
	fatal := func(format string, args ...any) {
		diags = append(diags, diag.Fatalf("unit %s (%s): %s", u.Name, u.Target, fmt.Sprintf(format, args...)).At(where))
	}
	ext := path.Ext(u.Name)
	want, knownType := typeSection[ext]
	if u.Name == "" || strings.Contains(u.Name, "/") || !knownType || strings.TrimSuffix(u.Name, ext) == "" {
		fatal("not a unit name: want NAME.service, .socket, .timer, .mount, .path, .slice, .scope, .automount, .swap, .target or .device")
		return diags
	}
	if u.Content == "" && len(u.DropIns) == 0 {
		fatal("neither content nor drop-ins")
		return diags
	}
	if u.Content != "" {
		sections, err := unit.DeserializeSections(strings.NewReader(u.Content))
		if err != nil {
			fatal("does not parse: %v", err)
			return diags
		}
		if line := outsideSection(u.Content); line != "" {
			fatal("%q is outside any section; systemd ignores it", line)
		}
		has := map[string]bool{}
		for _, s := range sections {
			has[s.Section] = true
			if !allowedSections[s.Section] && !strings.HasPrefix(s.Section, "X-") {
				fatal("unknown section [%s]", s.Section)
			}
		}
		if u.Enable && !has["Install"] {
			fatal("is enabled but has no [Install] section, so systemctl enable cannot enable it")
		}
		if want != "" && !has[want] {
			diags = append(diags, diag.Warningf("unit %s (%s) has no [%s] section", u.Name, u.Target, want).At(where).
				WithHint(fmt.Sprintf("a %s unit is configured in its [%s] section; without one systemd runs it with defaults only", ext, want)))
		}
	}
	for j, d := range u.DropIns {
		n := len(diags)
		if d.Name == "" || strings.Contains(d.Name, "/") {
			fatal("drop-in %q: not a file name", d.Name)
			continue
		}
		sections, err := unit.DeserializeSections(strings.NewReader(d.Content))
		if err != nil {
			fatal("drop-in %s does not parse: %v", d.Name, err)
			continue
		}
		if line := outsideSection(d.Content); line != "" {
			fatal("drop-in %s: %q is outside any section; systemd ignores it", d.Name, line)
		}
		for _, s := range sections {
			if !allowedSections[s.Section] && !strings.HasPrefix(s.Section, "X-") {
				diags = append(diags, diag.Fatalf("unit %s (%s): drop-in %s: unknown section [%s]", u.Name, u.Target, d.Name, s.Section).
					At(fmt.Sprintf("%s.dropIns[%d]", where, j)))
			}
		}
		about(diags[n:], d.Plugin)
	}
	return diags
}

// unitPath names a unit the way core/merge's diagnostics do: by target and
// name, which stay the same whatever order the plugins ran in.
func unitPath(u construct.Unit) string {
	return fmt.Sprintf("constructs.units[%s:%s]", u.Target, u.Name)
}

// outsideSection returns the first setting before any [Section] header, which
// go-systemd's parser skips silently and systemd only logs.
func outsideSection(content string) string {
	for _, line := range strings.Split(content, "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
			continue
		case strings.HasPrefix(line, "["):
			return ""
		default:
			return line
		}
	}
	return ""
}
