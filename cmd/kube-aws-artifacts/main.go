// Command kube-aws-artifacts fills kube-aws's air-gapped artifact folder
// (`make artifacts` runs it) for every supported Kubernetes version, or the
// ones -kubernetes names: flags in, artifacts.Build, a table out.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/kube-aws/kube-aws/release/artifacts"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "kube-aws-artifacts:", err)
		os.Exit(1)
	}
}

func run() error {
	defDir, err := artifacts.DefaultDir()
	if err != nil {
		return err
	}
	var (
		dir     = flag.String("dir", defDir, "artifact folder to fill (default $"+artifacts.DirEnv+" or the user cache folder)")
		state   = flag.String("state", "", "builder state folder (stamps, build outputs); default <dir>.state")
		arch    = flag.String("arch", "amd64", "CPU architecture: "+strings.Join(artifacts.Architectures, " or "))
		kube    = flag.String("kubernetes", os.Getenv(artifacts.KubernetesEnv), "comma-separated Kubernetes versions the folder holds (default $"+artifacts.KubernetesEnv+", else every one the builder knows: "+strings.Join(artifacts.KubernetesVersions(), ", ")+")")
		only    = flag.String("only", "", "comma-separated artifact names to build, for every selected Kubernetes version (default all)")
		source  = flag.String("source", "", "kube-aws checkout (default: the Go module holding the working folder)")
		debian  = flag.String("debian-sources", "", "apt sources file or mirror URL for Debian packages (default the machine's own)")
		jsonOut = flag.Bool("json", false, "print the result as JSON")
	)
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every setting is a flag (see -h)", flag.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *source == "" {
		if *source, err = artifacts.SourceRoot(ctx, "", "."); err != nil {
			return err
		}
	}
	var names, versions []string
	if *only != "" {
		names = strings.Split(*only, ",")
	}
	if *kube != "" {
		versions = strings.Split(*kube, ",")
	}
	start := time.Now()
	res, err := artifacts.Build(ctx, artifacts.Options{
		Source: *source, Dir: *dir, StateDir: *state, Arch: *arch, Kubernetes: versions, Only: names,
		DebianSources: *debian, Log: os.Stderr,
	})
	if err != nil {
		return err
	}
	if *jsonOut {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(res)
	}
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "file\tMB\tsha256\t")
	var total int64
	for _, a := range res.Artifacts {
		for _, f := range a.Files {
			total += f.Size
			fmt.Fprintf(tw, "%s\t%.1f\t%s\t\n", f.Path, float64(f.Size)/1e6, f.SHA256[:12])
		}
	}
	tw.Flush()
	fmt.Printf("%s, Kubernetes %s: %d artifacts, %.1f MB in %s, %s\n", res.Platform, strings.Join(res.Kubernetes, " and "), len(res.Artifacts), float64(total)/1e6, *dir, time.Since(start).Round(100*time.Millisecond))
	return nil
}
