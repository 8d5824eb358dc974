package main

import "go.phpboyscout.uk/mcp/resources/mcpsdk"

// toolOptions is the adapter's tool surface that --tools asks for: nil
// (off) unless it is set.
func (s *serveCmd) toolOptions() *mcpsdk.ToolOptions {
	if !s.Tools {
		return nil
	}
	return &mcpsdk.ToolOptions{}
}
