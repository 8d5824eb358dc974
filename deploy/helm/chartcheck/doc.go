// Package chartcheck tests the Helm chart in ../mcp-resources: it renders
// the chart with `helm template` (the helm binary from MCPRES_HELM, else
// PATH; scripts/tools.sh helm builds it) for several sets of values and
// decodes every manifest strictly into its k8s.io/api type, so that a
// misspelt or misplaced field fails instead of being dropped by the API
// server. It also renders the chart with exactly the values of its
// README's install (parsed out of the README) and runs the mcp-resources
// binary with the rendered container's arguments, environment and mounted
// files against the test services (MCPRES_POSTGRES_URL, MCPRES_S3_*; psql
// and the aws CLI set up the documents example), asserting /readyz and a
// resources/read with a bearer token; MCPRES_INTEGRATION=require makes it
// fail instead of skip without them. It is a module of its own so that the Kubernetes API types never
// enter the dependencies of the resources module.
package chartcheck
