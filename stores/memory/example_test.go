package memory_test

import (
	"context"
	"fmt"

	"go.phpboyscout.uk/mcp/resources/core"
	"go.phpboyscout.uk/mcp/resources/stores/memory"
)

// A store with two documents, a template binding over it, the store's own
// grants as the policy, and a change between two reads.
func Example() {
	st := memory.New(nil)
	st.Put("readme", memory.Item{MIMEType: "text/markdown", Text: true, Body: []byte("# Hello")})
	st.Put("logo", memory.Item{MIMEType: "image/png", Body: []byte{0x89, 'P', 'N', 'G'}})
	st.Grant("readme", "alice", memory.Access{Read: true})

	doc := st.Binding(core.ResourceDefinition{URITemplate: "mem://docs/{key}", Name: "doc"}, memory.KeyFromVar("key"))
	res, err := core.NewResources([]core.ResourceBinding{doc}, st.Policy())
	if err != nil {
		panic(err)
	}
	alice := core.WithCaller(context.Background(), core.Caller{Principal: "alice"})

	r, err := res.Read(alice, "mem://docs/readme")
	fmt.Println(r.Items()[0].MIMEType(), r.Items()[0].Text(), err)

	st.Put("readme", memory.Item{MIMEType: "text/markdown", Text: true, Body: []byte("# Hello again")})
	r, err = res.Read(alice, "mem://docs/readme")
	fmt.Println(r.Items()[0].Text(), err)

	_, err = res.Read(alice, "mem://docs/logo") // no grant: as if it did not exist
	fmt.Println(err)
	// Output:
	// text/markdown # Hello <nil>
	// # Hello again <nil>
	// resource unavailable
}
