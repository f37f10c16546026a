// Output parts and items (spec "Output part" / "Output item"); an Item is also the value
// carried on graph edges (docs/workflow-format.md "Values and iteration").
import { z } from 'zod';

const url = z.string().min(1).meta({ format: 'uri', description: 'Direct link to a hosted file.' });
const name = z.string().optional().meta({ description: 'File name, when known.' });
// D19: files stored by this service know their sniffed type; the spec lists it for `file` parts, we add it to all three.
const mimeType = z
  .string()
  .optional()
  .meta({ description: 'MIME type, sniffed from the bytes, when known.' });

const TextPartSchema = z.object({ type: z.literal('text'), text: z.string() });
// z.unknown() inside an object is still a required key, so a json part always has `data`.
const JsonPartSchema = z.object({ type: z.literal('json'), data: z.unknown() });
const ImagePartSchema = z.object({
  type: z.literal('image'),
  url,
  name,
  mime_type: mimeType,
});
const VideoPartSchema = z.object({
  type: z.literal('video'),
  url,
  name,
  mime_type: mimeType,
});
const FilePartSchema = z.object({
  type: z.literal('file'),
  url,
  name,
  mime_type: mimeType,
});

export const PartSchema = z.discriminatedUnion('type', [
  TextPartSchema,
  JsonPartSchema,
  ImagePartSchema,
  VideoPartSchema,
  FilePartSchema,
]);

export const ItemErrorSchema = z.object({
  message: z.string(),
  type: z.string().optional(),
  code: z.number().optional(),
});

const ItemSchema = z.object({
  status: z.enum(['completed', 'failed']),
  parts: z.array(PartSchema),
  error: ItemErrorSchema.optional(),
});

export type Part = z.infer<typeof PartSchema>;
export type ItemError = z.infer<typeof ItemErrorSchema>;
export type Item = z.infer<typeof ItemSchema>;
