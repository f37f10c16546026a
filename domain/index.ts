// The domain model shared by the HTTP API and the Temporal workflow code. Everything here
// is pure and imports nothing but zod, because the workflow sandbox loads it.
export * from './labels';
export * from './ids';
export * from './parts';
export * from './templates';
export * from './graph';
export * from './contract';
export * from './problems';
export * from './input-values';
export * from './storable-json';
export * from './inputs';
export * from './validate-graph';
export * from './workflow-json-schema';
export * from './errors';
export * from './run';
export * from './items';
export * from './run-chunks';
export * from './run-view';
export * from './run-usage';
export * from './run-size';
export * from './zod-problems';
