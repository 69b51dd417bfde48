/**
 * MCP tool schemas, written once: each tool's arguments are a TypeBox schema in core/api/mcp.ts (the project's one
 * schema home). The MCP SDK's `registerTool` takes zod, so the zod schema is derived here from the TypeBox one:
 *
 * - zod checks the JSON types and which properties are required, so the SDK refuses a call that is not even shaped
 *   right;
 * - every value rule (lengths, patterns, ranges, item counts, enums, no extra properties) is carried into the JSON
 *   Schema that `tools/list` shows as metadata, and is checked by the tool itself (`checkArgs`, and the bulk-row rules
 *   of core/bulk for `post_tasks`), so each refusal carries its API code (`INVALID_ROWS`, `VALIDATION_FAILED`...).
 */
import { z } from "zod";
import { Value } from "@sinclair/typebox/value";
import type { TSchema } from "@sinclair/typebox";
import { clientError } from "../errors";

/** The JSON Schema keywords carried to `tools/list` as metadata (checked by the tool, not by zod). */
const CARRIED = ["description", "minLength", "maxLength", "pattern", "minimum", "maximum", "minItems", "maxItems", "enum"] as const;

interface JsonSchema {
  type?: string;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  const?: unknown;
  additionalProperties?: boolean | JsonSchema;
  [keyword: string]: unknown;
}

function metadataOf(schema: JsonSchema): Record<string, unknown> {
  const meta: Record<string, unknown> = {};
  for (const keyword of CARRIED) if (schema[keyword] !== undefined) meta[keyword] = schema[keyword];
  // A union of literals (TypeBox's enum) is shown as one `enum`.
  if (schema.anyOf?.every((member) => member.const !== undefined)) meta.enum = schema.anyOf.map((member) => member.const);
  if (schema.additionalProperties === false) meta.additionalProperties = false;
  return meta;
}

function toZod(schema: JsonSchema): z.ZodType {
  let zod: z.ZodType;
  if (schema.anyOf?.every((member) => member.const !== undefined)) {
    const types = new Set(schema.anyOf.map((member) => typeof member.const));
    zod = types.size === 1 && types.has("string") ? z.string() : z.unknown();
  } else {
    switch (schema.type) {
      case "object": {
        const required = new Set(schema.required ?? []);
        const shape: Record<string, z.ZodType> = {};
        for (const [name, property] of Object.entries(schema.properties ?? {})) {
          const field = toZod(property);
          shape[name] = required.has(name) ? field : field.optional();
        }
        // Extra properties reach the tool, which refuses them with a code (zod would drop them silently).
        zod = z.looseObject(shape);
        break;
      }
      case "array":
        zod = z.array(schema.items ? toZod(schema.items) : z.unknown());
        break;
      case "string":
        zod = z.string();
        break;
      case "integer":
        zod = z.number().int();
        break;
      case "number":
        zod = z.number();
        break;
      case "boolean":
        zod = z.boolean();
        break;
      default:
        throw new TypeError(`MCP tool schemas take objects, arrays, strings, numbers, booleans and literal unions; got ${JSON.stringify(schema)}`);
    }
  }
  const meta = metadataOf(schema);
  return Object.keys(meta).length > 0 ? zod.meta(meta) : zod;
}

/** The zod schema the MCP SDK registers for a tool whose arguments are this TypeBox object schema. */
export function zodArgs(schema: TSchema): z.ZodObject {
  if ((schema as JsonSchema).type !== "object") throw new TypeError("MCP tool arguments are an object schema");
  return toZod(schema) as z.ZodObject;
}

/**
 * Checks arguments against their TypeBox schema: `VALIDATION_FAILED` naming each field otherwise (as the API answers a
 * body that fails its schema).
 */
export function checkArgs<T>(schema: TSchema, args: unknown): T {
  if (Value.Check(schema, args)) return args as T;
  const details = [...Value.Errors(schema, args)].slice(0, 20).map((e) => ({ field: `arguments${e.path.replace(/\//g, ".")}`, message: e.message }));
  throw clientError("VALIDATION_FAILED", `Invalid arguments: ${details.map((d) => `${d.field} ${d.message}`).join("; ")}`, { details });
}
