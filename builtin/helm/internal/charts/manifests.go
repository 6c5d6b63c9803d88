package charts

import (
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/releaseutil"
	"sigs.k8s.io/yaml"
)

// manifestProblem is a rendered manifest or CRD file that helm install
// would refuse, located in that file.
type manifestProblem struct {
	file    string
	line    int
	message string
}

// checkManifests does to the rendered templates what helm install does
// before it creates anything: every file but partials, NOTES.txt and blank
// ones is split into documents the way Helm splits them
// (releaseutil.SplitManifests), each document must parse as YAML with
// Helm's parser (sigs.k8s.io/yaml, as releaseutil.SortManifests does) and
// name an apiVersion and a kind (without them Helm's kube client cannot
// build the object). Every CRD file in crds/ must pass the same test, as
// helm install builds each before creating it. Files are checked in path
// order, and every broken one is reported.
func checkManifests(rendered map[string]string, crds []chart.CRD) []manifestProblem {
	var out []manifestProblem
	paths := make([]string, 0, len(rendered))
	for p := range rendered {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	for _, p := range paths {
		// renderResources drops NOTES.txt; SortManifests skips partials
		// and blank files.
		if strings.HasSuffix(p, "NOTES.txt") || strings.HasPrefix(path.Base(p), "_") || strings.TrimSpace(rendered[p]) == "" {
			continue
		}
		out = append(out, checkFile(p, rendered[p])...)
	}
	for _, c := range crds {
		if c.File == nil {
			continue
		}
		out = append(out, checkFile(c.Filename, string(c.File.Data))...)
	}
	return out
}

// yamlLine finds the line of a YAML error in sigs.k8s.io/yaml's message,
// which counts from the document's start: the message gives the file's.
var yamlLine = regexp.MustCompile(`^(?:error converting YAML to JSON: )?yaml: line (\d+): `)

func checkFile(name, content string) []manifestProblem {
	docs := releaseutil.SplitManifests(content)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var out []manifestProblem
	pos := 0
	for _, k := range keys {
		doc := docs[k]
		// Documents are trimmed substrings of the file, in order: where
		// one starts gives file lines to what the parser says.
		start := 1
		if i := strings.Index(content[pos:], doc); i >= 0 {
			start = strings.Count(content[:pos+i], "\n") + 1
			pos += i + len(doc)
		}
		var head releaseutil.SimpleHead
		if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
			line, msg := start, err.Error()
			if m := yamlLine.FindStringSubmatch(msg); m != nil {
				n, _ := strconv.Atoi(m[1])
				line, msg = start+n-1, msg[len(m[0]):]
			}
			out = append(out, manifestProblem{file: name, line: line, message: "not YAML Helm can parse: " + msg})
			continue
		}
		var missing []string
		if head.Version == "" {
			missing = append(missing, "apiVersion")
		}
		if head.Kind == "" {
			missing = append(missing, "kind")
		}
		if len(missing) > 0 {
			out = append(out, manifestProblem{file: name, line: start, message: fmt.Sprintf("a document without %s: helm install cannot make a Kubernetes object of it", strings.Join(missing, " and "))})
		}
	}
	return out
}
