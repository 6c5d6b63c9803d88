package nodeplan

import (
	"net"
	"net/url"
	"path"
	"regexp"
	"strconv"
	"strings"
	"time"
)

var dnsLabel = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$`)

// absPath checks a path on the machine: absolute and clean.
func (c *checker) absPath(field, p string) {
	switch {
	case p == "":
		c.add(field, "missing: want an absolute path on the machine")
	case !path.IsAbs(p):
		c.add(field, "%q is not absolute", p)
	case path.Clean(p) != p:
		c.add(field, "%q is not clean: write %q", p, path.Clean(p))
	}
}

// optPath checks an optional path on the machine.
func (c *checker) optPath(field, p string) {
	if p != "" {
		c.absPath(field, p)
	}
}

func (c *checker) sha256(field, s string) {
	if !IsSHA256(s) {
		c.add(field, "%q is not a sha256 (64 lower-case hex digits)", s)
	}
}

// assetKey checks an S3 key relative to the cluster prefix that must be
// content-addressed by sum.
func (c *checker) assetKey(field, key, sum string) {
	switch d, ok := KeyDigest(key); {
	case strings.HasPrefix(key, "/") || strings.HasPrefix(key, "s3://"):
		c.add(field, "%q: want a key relative to the cluster's S3 prefix, such as assets/<sha256>", key)
	case !ok:
		c.add(field, "%q is not content-addressed: its last element must be the object's sha256", key)
	case IsSHA256(sum) && d != sum:
		c.add(field, "%q names sha256 %s, but the plan says %s", key, d, sum)
	}
}

// mode checks an octal file mode such as "0644"; empty is allowed.
func (c *checker) mode(field, m string) {
	if m == "" {
		return
	}
	if _, err := ParseMode(m); err != nil {
		c.add(field, "%v", err)
	}
}

// ParseMode parses an octal file mode such as "0644" or "755".
func ParseMode(m string) (uint32, error) {
	v, err := strconv.ParseUint(m, 8, 32)
	if err != nil || v > 0o7777 {
		return 0, &modeError{m}
	}
	return uint32(v), nil
}

type modeError struct{ m string }

func (e *modeError) Error() string {
	return strconv.Quote(e.m) + " is not an octal file mode such as \"0644\""
}

// duration checks an optional Go duration ("90s", "10m", "8760h").
func (c *checker) duration(field, d string) {
	if d == "" {
		return
	}
	if v, err := time.ParseDuration(d); err != nil || v <= 0 {
		c.add(field, "%q is not a positive duration such as \"90s\", \"10m\" or \"8760h\"", d)
	}
}

// DurationOr parses an optional duration that Validate checked, or returns def.
func DurationOr(d string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(d); err == nil && v > 0 {
		return v
	}
	return def
}

// facts checks a field that may name facts.
func (c *checker) facts(field, s string) {
	if err := checkFacts(s); err != nil {
		c.add(field, "%v", err)
	}
}

// dnsName checks a DNS name that may name facts.
func (c *checker) dnsName(field, s string) {
	if s == "" {
		c.add(field, "missing: want a DNS name")
		return
	}
	if err := checkFacts(s); err != nil {
		c.add(field, "%v", err)
		return
	}
	// The facts' values are checked on the machine; here, only the
	// literal labels around them.
	lit := strings.TrimSuffix(placeholder.ReplaceAllString(s, "x"), ".")
	for _, l := range strings.Split(lit, ".") {
		if l == "*" {
			continue
		}
		if !dnsLabel.MatchString(strings.ToLower(l)) {
			c.add(field, "%q is not a DNS name (label %q)", s, l)
			return
		}
	}
}

// httpsURL checks an https URL that may name facts; example is one such
// URL, for the message.
func (c *checker) httpsURL(field, s, example string) {
	if err := checkFacts(s); err != nil {
		c.add(field, "%v", err)
		return
	}
	if u, err := url.Parse(placeholder.ReplaceAllString(s, "x")); err != nil || u.Scheme != "https" || u.Host == "" {
		c.add(field, "%q is not an https URL such as %s", s, example)
	}
}

// ipAddress checks an IP address that may name facts.
func (c *checker) ipAddress(field, s string) {
	if err := checkFacts(s); err != nil {
		c.add(field, "%v", err)
		return
	}
	if !placeholder.MatchString(s) && net.ParseIP(s) == nil {
		c.add(field, "%q is not an IP address", s)
	}
}

// owner checks "user", "user:group" or empty.
func (c *checker) owner(field, o string) {
	if o == "" {
		return
	}
	u, g, _ := strings.Cut(o, ":")
	if u == "" || strings.ContainsAny(o, " \t\n") || strings.Count(o, ":") > 1 || (strings.Contains(o, ":") && g == "") {
		c.add(field, "%q: want user or user:group", o)
	}
}
