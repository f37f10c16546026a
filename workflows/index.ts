// The workflow bundle's entry: only workflow functions are exported from here.
export { runWorkflow } from './run-workflow';
export { webhookWorkflow } from './webhook-workflow';
export { retentionWorkflow } from './retention-workflow';
