// Regenerates docs/workflow.schema.json:
//   npx tsx tools/scripts/print-workflow-schema.ts > docs/workflow.schema.json
import { workflowJsonSchemaText } from '../../domain/workflow-json-schema';

// console rather than process.stdout: nothing under domain/ touches Node globals.
console.log(workflowJsonSchemaText().trimEnd());
