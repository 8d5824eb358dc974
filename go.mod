module go.phpboyscout.uk/mcp/resources

go 1.26
