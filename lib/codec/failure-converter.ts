/**
 * D32: failure messages and stack traces can quote customer data (a provider's refusal, an
 * input that failed validation), so they travel as an encoded payload that the codec seals,
 * as Temporal advises for encryption. Loaded by path (DataConverter.failureConverterPath) by
 * clients, workers and the workflow bundle alike: it must stay free of Node built-ins.
 */
import { DefaultFailureConverter } from '@temporalio/common';

export const failureConverter = new DefaultFailureConverter({ encodeCommonAttributes: true });
