// Package storetest is the conformance suite that every store of this module
// runs, in the manner of gocloud.dev/blob/drivertest and testing/fstest.
//
// A store proves itself with one call in its tests:
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(ctx context.Context, t *testing.T) (storetest.Harness, error) {
//			return newHarness(ctx, t) // your store, fresh items, cleanup via t.Cleanup
//		})
//	}
//
// The Harness creates, changes, revokes, restores and deletes items and
// builds a principal's request context; its Binding is the store's own
// resolver and reader. Each case is a subtest named for the rule it proves
// (for example ChangedItemIsNeverServedInItsNewVersion): it plans an item
// through the store's resolver (selected by a real core.Resources, so the
// match is what a read would produce), changes storage, then calls the
// store's reader directly, so what a case proves is the storage request
// itself, not a gateway policy. Only the last case goes through a gateway
// read of a bundle. A harness that cannot do something returns an error
// wrapping errors.ErrUnsupported and the cases that need it skip; a harness
// that also implements BodyCounter lets the suite prove that planning
// fetches no body.
//
// The suite's own tests run it on stores/memory (memory_test.go, the
// reference harness to copy) and on four deliberately broken stores, each
// of which must fail the case named for its fault.
package storetest
