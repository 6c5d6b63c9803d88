package nodeplan

import "testing"

// Any bytes decode into any plan or fail with an error, never a panic; a
// plan that decodes encodes and decodes again to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(uint8(0), `{"files": [{"path": "/a", "format": "json"}]}`)
	f.Add(uint8(1), `{"binaries": [{"name": "k", "path": "/k", "sources": {"amd64": {"url": "https://x/y", "sha256": "`+sum+`"}}}]}`)
	f.Add(uint8(6), `{"etcd": {"endpoints": ["https://{privateIPv4}:2379"], "caCert": "/a", "cert": "/b", "key": "/c"}}`)
	plans := []func() Plan{
		func() Plan { return &SecretsPlan{} }, func() Plan { return &ArtifactsPlan{} }, func() Plan { return &CertificatesPlan{} },
		func() Plan { return &VolumesPlan{} }, func() Plan { return &DNSPlan{} }, func() Plan { return &AddonsPlan{} },
		func() Plan { return &GoalPlan{} }, func() Plan { return &ApproverPlan{} },
		func() Plan { return &DrainerPlan{} }, func() Plan { return &PodIdentityWebhookPlan{} },
	}
	f.Fuzz(func(t *testing.T, which uint8, in string) {
		mk := plans[int(which)%len(plans)]
		p := mk()
		if err := Decode([]byte(in), p); err != nil {
			return
		}
		b, err := Encode(p)
		if err != nil {
			t.Fatalf("a decoded plan does not encode: %v", err)
		}
		q := mk()
		if err := Decode(b, q); err != nil {
			t.Fatalf("an encoded plan does not decode: %v\n%s", err, b)
		}
		if c, _ := Encode(q); string(c) != string(b) {
			t.Fatalf("encode is not stable:\n%s\n%s", b, c)
		}
	})
}
