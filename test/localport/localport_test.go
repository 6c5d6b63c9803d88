package localport

import (
	"net"
	"strconv"
	"testing"
)

func TestFreeIsBindable(t *testing.T) {
	p, err := Free()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
	if err != nil {
		t.Fatalf("port %d is not free: %v", p, err)
	}
	l.Close()
}
