package kubeversion

import "testing"

func TestParse(t *testing.T) {
	tests := []struct {
		in, want string
		minor    int
		err      bool
	}{
		{in: "1.30.4", want: "v1.30.4", minor: 30},
		{in: "v1.31.0", want: "v1.31.0", minor: 31},
		{in: "v1.31.0-rc.1", want: "v1.31.0-rc.1", minor: 31},
		{in: "1.29", want: "v1.29", minor: 29},
		{in: "", err: true},
		{in: "2.0.0", err: true},
		{in: "1", err: true},
		{in: "1.x.0", err: true},
		{in: "1.30-rc.1", err: true},
	}
	for _, tt := range tests {
		v, err := Parse(tt.in)
		if tt.err {
			if err == nil {
				t.Errorf("Parse(%q) = %v, want an error", tt.in, v)
			}
			continue
		}
		if err != nil || v.String() != tt.want || v.Minor != tt.minor {
			t.Errorf("Parse(%q) = %v (minor %d), %v; want %s", tt.in, v, v.Minor, err, tt.want)
		}
	}
}
