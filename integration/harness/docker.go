package harness

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/log"
)

var (
	dockerOnce sync.Once
	dockerErr  error
)

// dockerHealth reports, once per test binary, whether a Docker provider
// answers testcontainers' own health check. The check runs in its own
// goroutine and is abandoned after dockerProbeTimeout: finding the Docker
// host happens outside any context we could cancel.
func dockerHealth() error {
	dockerOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), dockerProbeTimeout)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			defer func() {
				if r := recover(); r != nil {
					done <- fmt.Errorf("docker provider panicked: %v", r)
				}
			}()
			provider, err := testcontainers.ProviderDefault.GetProvider(testcontainers.WithLogger(log.NewNoopLogger()))
			if err != nil {
				done <- err
				return
			}
			done <- provider.Health(ctx) // Health also closes the provider.
		}()
		select {
		case dockerErr = <-done:
		case <-ctx.Done():
			dockerErr = fmt.Errorf("no answer within %s", dockerProbeTimeout.Round(time.Second))
		}
	})
	return dockerErr
}
