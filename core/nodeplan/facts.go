package nodeplan

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Facts are what a machine knows about itself once it runs: the instance
// facts from the instance metadata service, plus facts the volumes plan
// derives from an attached volume's tags (Volume.Facts). Plan fields that
// "may name facts" are expanded with Expand.
type Facts map[string]string

// The instance facts every machine has.
const (
	FactInstanceID       = "instanceID"       // i-0123456789abcdef0
	FactPrivateIPv4      = "privateIPv4"      // 10.0.1.23
	FactHostname         = "hostname"         // ip-10-0-1-23.ec2.internal (EC2's local-hostname: the node name)
	FactAvailabilityZone = "availabilityZone" // us-east-1a
	FactRegion           = "region"           // us-east-1
)

// InstanceFacts lists the instance facts in a stable order.
var InstanceFacts = []string{FactInstanceID, FactPrivateIPv4, FactHostname, FactAvailabilityZone, FactRegion}

// placeholder is {name}: braces never occur in DNS names, IP addresses,
// URLs' hosts or certificate subjects, so nothing else reads as one.
var placeholder = regexp.MustCompile(`\{([^{}]*)\}`)

// factName is what a fact may be called.
var factName = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9]*$`)

// ValidFactName reports whether name may name a fact.
func ValidFactName(name string) bool { return factName.MatchString(name) }

// FactMarker is the marker a file's content names a fact with,
// ((fact:<name>)): the `secrets` step substitutes it structurally, by the
// file's format, in the same pass as the secret markers (a static pod
// manifest can so carry the machine's address).
func FactMarker(name string) string { return "((fact:" + name + "))" }

// FactMarkerPattern matches a fact marker.
var FactMarkerPattern = regexp.MustCompile(`\(\(fact:[a-zA-Z][a-zA-Z0-9]*\)\)`)

// AnyMarkerPattern matches a secret marker or a fact marker: what the
// `secrets` step substitutes in the files of the secrets plan.
var AnyMarkerPattern = regexp.MustCompile(MarkerPattern.String() + `|` + FactMarkerPattern.String())

// FactOfMarker returns the fact a marker names, and false for a secret
// marker.
func FactOfMarker(m string) (string, bool) {
	if !FactMarkerPattern.MatchString(m) || FactMarkerPattern.FindString(m) != m {
		return "", false
	}
	return m[len("((fact:") : len(m)-2], true
}

// Get returns the fact of that name. Facts the bootstrap passed in the
// environment (KUBE_AWS_FACT_<NAME>, FromEnviron) are known only by their
// upper-case name, so a name no fact has exactly is looked up regardless of
// case: {apiLoadBalancerDNS} finds KUBE_AWS_FACT_APILOADBALANCERDNS.
func (f Facts) Get(name string) (string, bool) {
	if v, ok := f[name]; ok && v != "" {
		return v, true
	}
	for k, v := range f {
		if v != "" && strings.EqualFold(k, name) {
			return v, true
		}
	}
	return "", false
}

// FromEnviron returns the facts the environment carries as
// KUBE_AWS_FACT_<NAME>=value (the launch template's bootstrap sets them from
// stack parameters, such as the API load balancer's DNS name), named by the
// lower-case <name>. Empty values are left out.
func FromEnviron(environ []string) Facts {
	out := Facts{}
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		name, isFact := strings.CutPrefix(k, "KUBE_AWS_FACT_")
		if !ok || !isFact || v == "" || !factName.MatchString(name) {
			continue
		}
		out[strings.ToLower(name)] = v
	}
	return out
}

// Expand replaces every {name} in s by the fact of that name. A name no
// fact has is an error naming the facts there are, never an empty value.
func (f Facts) Expand(s string) (string, error) {
	var err error
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		name := m[1 : len(m)-1]
		v, ok := f.Get(name)
		if !ok {
			if err == nil {
				err = fmt.Errorf("%q names fact %s, which this machine does not have (it has %s)", s, m, strings.Join(f.names(), ", "))
			}
			return m
		}
		return v
	})
	return out, err
}

func (f Facts) names() []string {
	out := make([]string, 0, len(f))
	for k, v := range f {
		if v != "" {
			out = append(out, "{"+k+"}")
		}
	}
	sort.Strings(out)
	return out
}

// FactEnvName is the variable FactsEnvPath gives a fact:
// KUBE_AWS_FACT_ and the name in upper case (privateIPv4 ->
// KUBE_AWS_FACT_PRIVATEIPV4).
func FactEnvName(name string) string { return "KUBE_AWS_FACT_" + strings.ToUpper(name) }

// checkFacts says what is wrong with the placeholders of a field that may
// name facts: only well-formed {name}s, no stray braces.
func checkFacts(s string) error {
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		if !factName.MatchString(m[1]) {
			return fmt.Errorf("%q: {%s} is not a fact name (letters and digits, starting with a letter)", s, m[1])
		}
	}
	if rest := placeholder.ReplaceAllString(s, ""); strings.ContainsAny(rest, "{}") {
		return fmt.Errorf("%q has an unmatched brace", s)
	}
	return nil
}
