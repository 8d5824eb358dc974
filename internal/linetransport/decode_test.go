package linetransport

import (
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeSeeds are lines of the common shape (decodeRequest's) and lines
// just outside it, which must take the SDK's decoder.
var decodeSeeds = []string{
	`{"jsonrpc":"2.0","id":17,"method":"resources/read","params":{"uri":"asset://project/handbook/asset/welcome","_meta":{"progressToken":3}}}`,
	`{"jsonrpc":"2.0","id":"a-1","method":"resources/list"}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"method":"tools/call","params":[1,2],"id":-9007199254740991,"jsonrpc":"2.0"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":{}}`,
	`{"jsonrpc":"2.0","id":1.5e1,"method":"ping"}`, // Classify refuses its id before; decoded as the SDK does
	`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`,
	`{"jsonrpc":"2.0","id":null,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"Method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","method":"pong"}`,
	`{"jsonrpc":"2.0","id":1,"method":"p\u0069ng"}`,
	`{"jsonrpc":"1.0","id":1,"method":"ping"}`,
	`{"jsonrpc":"2.0","id":1,"method":"ping","extra":true}`,
	`{"jsonrpc":"2.0","id":1,"result":{}}`,
	"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffng\"}",
}

// TestDecodeRequestTakesTheCommonShape proves that the requests a client
// sends on every read are decoded without the SDK's decoder (its 32 KiB
// per value) and that the lines outside that shape are left to it.
func TestDecodeRequestTakesTheCommonShape(t *testing.T) {
	for i, s := range decodeSeeds {
		_, ok := decodeRequest([]byte(s))
		if want := i < 6; ok != want {
			t.Errorf("%s: decoded here %v, want %v", s, ok, want)
		}
	}
	line := []byte(decodeSeeds[0])
	if n := testing.AllocsPerRun(20, func() { Classify(line) }); n > 200 {
		t.Errorf("Classify of a read request: %.0f allocations", n)
	}
	var bytesPerOp uint64
	res := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Classify(line)
		}
	})
	bytesPerOp = uint64(res.AllocedBytesPerOp())
	if bytesPerOp > 16<<10 {
		t.Errorf("Classify of a read request allocates %d bytes, want under 16 KiB (the SDK's decoder takes 64 KiB)", bytesPerOp)
	}
}

// FuzzDecodeRequest compares decodeRequest with the SDK's decoder: every
// line it decodes, the SDK decodes to the same message.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range decodeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		req, ok := decodeRequest(line)
		if !ok {
			return
		}
		want, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatalf("%q: decoded here as %+v, the SDK refuses it: %v", line, req, err)
		}
		if !reflect.DeepEqual(jsonrpc.Message(req), want) {
			t.Fatalf("%q: decoded here as %#v, by the SDK as %#v", line, req, want)
		}
	})
}

// BenchmarkDecodeRead compares, in one run, what reading one read request
// costs the transport (Classify: the checks and decodeRequest) with the
// SDK's decoder alone on the same line.
func BenchmarkDecodeRead(b *testing.B) {
	line := []byte(decodeSeeds[0])
	b.Run("classify", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if m, _, _ := Classify(line); m == nil {
				b.Fatal("no message")
			}
		}
	})
	b.Run("sdk-decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}
