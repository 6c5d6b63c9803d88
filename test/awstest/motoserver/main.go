// Command motoserver starts moto on 127.0.0.1 on a free port, prints its URL
// on the first line of stdout (for `make demo` and benchmark scripts to read),
// and stops it when it receives SIGINT or SIGTERM.
//
//	go run ./test/awstest/motoserver
package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kube-aws/kube-aws/test/awstest"
)

func main() {
	url, stop, err := awstest.StartServer()
	if err != nil {
		fmt.Fprintln(os.Stderr, "motoserver:", err)
		os.Exit(1)
	}
	fmt.Println(url)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	stop()
}
