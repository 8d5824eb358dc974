package mcpsdk

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.phpboyscout.uk/mcp/resources/core"
)

// ParamsMessage is the message of the -32602 error a request whose params
// do not decode (a wrongly typed field such as "cursor":5, or params that
// are not an object) gets for a method other than the gateway's own; those
// get core's fixed invalid-request message ("invalid resource request").
const ParamsMessage = "invalid params"

// paramsOf are the params types of the methods whose params CheckParams
// checks: every request a server answers except initialize, whose params
// the SDK decodes into a type of its own.
var paramsOf = map[string]func() any{
	MethodListResources:         func() any { return new(mcp.ListResourcesParams) },
	MethodListResourceTemplates: func() any { return new(mcp.ListResourceTemplatesParams) },
	MethodReadResource:          func() any { return new(mcp.ReadResourceParams) },
	MethodSubscribe:             func() any { return new(mcp.SubscribeParams) },
	MethodUnsubscribe:           func() any { return new(mcp.UnsubscribeParams) },
	MethodSubscriptionsListen:   func() any { return new(mcp.SubscriptionsListenParams) },
	MethodComplete:              func() any { return new(mcp.CompleteParams) },
	"server/discover":           func() any { return new(mcp.DiscoverParams) },
	"ping":                      func() any { return new(mcp.PingParams) },
	"logging/setLevel":          func() any { return new(mcp.SetLoggingLevelParams) },
	"tools/list":                func() any { return new(mcp.ListToolsParams) },
	"tools/call":                func() any { return new(mcp.CallToolParamsRaw) },
	"prompts/list":              func() any { return new(mcp.ListPromptsParams) },
	"prompts/get":               func() any { return new(mcp.GetPromptParams) },
}

// gatewayMethods are the methods whose failures carry core's messages.
var gatewayMethods = map[string]bool{
	MethodListResources: true, MethodListResourceTemplates: true, MethodReadResource: true,
	MethodSubscribe: true, MethodUnsubscribe: true, MethodSubscriptionsListen: true, MethodComplete: true,
}

// CheckParams decodes the params of a request for method as the SDK will,
// and when they do not decode reports bad with the code and message to
// answer it with. The SDK decodes params before any middleware runs and answers a
// failure with a message that names Go types and quotes the params (a
// URI among them); a transport calls CheckParams first so that the client
// gets a fixed message instead: core's invalid-request message for the
// gateway's methods, [ParamsMessage] for the others, code -32602 for all.
// Absent and null params are left to the SDK, as is every method it does
// not list (initialize, notifications).
func CheckParams(method string, params json.RawMessage) (code int64, message string, bad bool) {
	newParams, ok := paramsOf[method]
	if !ok || len(params) == 0 || string(params) == "null" {
		return 0, "", false
	}
	if json.Unmarshal(params, newParams()) == nil {
		return 0, "", false
	}
	msg := ParamsMessage
	if gatewayMethods[method] {
		msg = core.NewFailure(core.FailureInvalidRequest, nil).Error()
	}
	return jsonrpc.CodeInvalidParams, msg, true
}
