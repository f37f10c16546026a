// The workflow bundle's entry: only workflow functions are exported from here.
export { runWorkflow } from './run-workflow';
