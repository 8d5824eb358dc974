// Package chartcheck tests the Helm chart in ../mcp-resources: it renders
// the chart with `helm template` (the helm binary from MCPRES_HELM, else
// PATH; scripts/tools.sh helm builds it) for several sets of values and
// decodes every manifest strictly into its k8s.io/api type, so that a
// misspelt or misplaced field fails instead of being dropped by the API
// server. It is a module of its own so that the Kubernetes API types never
// enter the dependencies of the resources module.
package chartcheck
