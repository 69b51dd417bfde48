/**
 * OpenAPI import (spec "OpenAPI import"): an OpenAPI 3.x JSON document (at most 10 MB) becomes draft HTTP tools, one
 * per operation: the name from `operationId`, the description from the summary, API-key-in-header and HTTP bearer
 * schemes understood, path and query parameters mapped as such, header parameters as `header` (accepted and dropped),
 * request-body fields as query parameters. A draft holds only the path: its URL must be made full by the owner, so no
 * imported tool runs before it is reviewed and confirmed into an agent or a skill. Pure: no I/O.
 */

export const MAX_OPENAPI_BYTES = 10 * 1024 * 1024;
/** Operations turned into drafts (the rest are counted in `skipped`). */
export const MAX_OPENAPI_DRAFTS = 200;

const METHODS = ["get", "post", "put", "patch", "delete"] as const;
const PARAMETER_TYPES = new Set(["string", "number", "integer", "boolean"]);

export type ImportRefusalReason = "YAML" | "NOT_JSON" | "NOT_OPENAPI_3" | "UNSUPPORTED_3_1" | "NO_OPERATIONS";

export class OpenApiImportError extends Error {
  constructor(
    readonly code: "TOOL_IMPORT_INVALID" | "TOOL_IMPORT_TOO_LARGE",
    message: string,
    readonly reason?: ImportRefusalReason,
  ) {
    super(message);
  }
}

export interface DraftTool {
  type: "http";
  name: string;
  description: string;
  parameters: {
    type: "object";
    properties: Record<string, { type: "string" | "number" | "integer" | "boolean"; description: string; enum?: Array<string | number | boolean> }>;
    required?: string[];
  };
  method: "GET" | "POST" | "PUT" | "PATCH" | "DELETE";
  /** The operation's path only, e.g. `/pets/{petId}`: make it a full URL when confirming the draft. */
  url: string;
  paramMapping: Record<string, "body" | "query" | "path" | "header">;
  auth?: { type: "bearer" | "header"; keyName?: string; secretRef: string };
}

export interface Draft {
  tool: DraftTool;
  /** What the owner must look at: always the URL; unsupported schemes, parameters dropped. */
  review: string[];
}

export interface ImportedDrafts {
  drafts: Draft[];
  /** The document's `servers` URLs, to make each draft's path a full URL. */
  servers: string[];
  skipped: number;
}

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json => typeof value === "object" && value !== null && !Array.isArray(value);

/** Follows a local `$ref` (`#/components/...`); anything else is answered as it is. */
function resolve(doc: Json, value: unknown, depth = 0): unknown {
  if (!isObject(value) || typeof value.$ref !== "string" || depth > 10) return value;
  const ref = value.$ref;
  if (!ref.startsWith("#/")) return {};
  let at: unknown = doc;
  for (const part of ref.slice(2).split("/")) at = isObject(at) ? at[part.replace(/~1/g, "/").replace(/~0/g, "~")] : undefined;
  return resolve(doc, at, depth + 1);
}

const toolName = (text: string) =>
  text
    .replace(/[^A-Za-z0-9_]+/g, "_")
    .replace(/^_+|_+$/g, "")
    .slice(0, 64) || "operation";

/** A 3.1-only construct in a schema: a `type` list (e.g. `["string", "null"]`) or `const`. */
function schema31(schema: unknown): string | undefined {
  if (!isObject(schema)) return undefined;
  if (Array.isArray(schema.type)) return "a type list";
  if ("const" in schema) return "const";
  for (const key of ["properties"]) {
    const nested = schema[key];
    if (isObject(nested)) for (const value of Object.values(nested)) if (schema31(value)) return schema31(value);
  }
  return undefined;
}

function parameterType(schema: unknown): { type: "string" | "number" | "integer" | "boolean"; enum?: Array<string | number | boolean> } {
  const s = isObject(schema) ? schema : {};
  const type = typeof s.type === "string" && PARAMETER_TYPES.has(s.type) ? (s.type as "string") : "string";
  const values = Array.isArray(s.enum) ? s.enum.filter((v) => ["string", "number", "boolean"].includes(typeof v)).slice(0, 100) : [];
  return { type, ...(values.length > 0 ? { enum: values as Array<string | number | boolean> } : {}) };
}

/** The document's drafts; `OpenApiImportError` with a code and a reason otherwise. */
export function importOpenApi(text: string): ImportedDrafts {
  if (Buffer.byteLength(text, "utf8") > MAX_OPENAPI_BYTES)
    throw new OpenApiImportError("TOOL_IMPORT_TOO_LARGE", `The document is over ${MAX_OPENAPI_BYTES} bytes.`);
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch {
    if (/^\s*(openapi|swagger)\s*:/m.test(text))
      throw new OpenApiImportError("TOOL_IMPORT_INVALID", "The document is YAML: only OpenAPI 3.x JSON is imported.", "YAML");
    throw new OpenApiImportError("TOOL_IMPORT_INVALID", "The document is not JSON.", "NOT_JSON");
  }
  if (!isObject(doc) || typeof doc.openapi !== "string" || !/^3\.[0-9]+/.test(doc.openapi))
    throw new OpenApiImportError(
      "TOOL_IMPORT_INVALID",
      "The document is not OpenAPI 3.x (no `openapi: 3.x` field; Swagger 2 is not imported).",
      "NOT_OPENAPI_3",
    );
  const is31 = doc.openapi.startsWith("3.1");
  if (is31 && ("webhooks" in doc || "jsonSchemaDialect" in doc))
    throw new OpenApiImportError(
      "TOOL_IMPORT_INVALID",
      "The document uses OpenAPI 3.1-only constructs (webhooks, jsonSchemaDialect).",
      "UNSUPPORTED_3_1",
    );
  const paths = isObject(doc.paths) ? doc.paths : {};
  const schemes = isObject(doc.components) && isObject(doc.components.securitySchemes) ? doc.components.securitySchemes : {};
  const globalSecurity = Array.isArray(doc.security) ? doc.security : [];
  const servers = (Array.isArray(doc.servers) ? doc.servers : []).flatMap((s) => (isObject(s) && typeof s.url === "string" ? [s.url] : []));

  const drafts: Draft[] = [];
  const names = new Set<string>();
  let skipped = 0;
  for (const [path, rawItem] of Object.entries(paths)) {
    const item = resolve(doc, rawItem);
    if (!isObject(item)) continue;
    for (const method of METHODS) {
      const operation = item[method];
      if (!isObject(operation)) continue;
      if (drafts.length >= MAX_OPENAPI_DRAFTS) {
        skipped += 1;
        continue;
      }
      const review = ["The URL holds the path only: make it a full https URL."];
      let name = toolName(typeof operation.operationId === "string" ? operation.operationId : `${method}_${path}`);
      for (let n = 2; names.has(name); n++) name = `${name.slice(0, 60)}_${n}`;
      names.add(name);
      const properties: DraftTool["parameters"]["properties"] = {};
      const required: string[] = [];
      const paramMapping: DraftTool["paramMapping"] = {};
      const parameters = [
        ...(Array.isArray(item.parameters) ? item.parameters : []),
        ...(Array.isArray(operation.parameters) ? operation.parameters : []),
      ];
      for (const raw of parameters) {
        const p = resolve(doc, raw);
        if (!isObject(p) || typeof p.name !== "string" || typeof p.in !== "string") continue;
        if (is31 && schema31(p.schema))
          throw new OpenApiImportError(
            "TOOL_IMPORT_INVALID",
            `${method.toUpperCase()} ${path}: parameter ${p.name} uses ${schema31(p.schema)} (OpenAPI 3.1 only).`,
            "UNSUPPORTED_3_1",
          );
        const where = p.in === "path" ? "path" : p.in === "query" ? "query" : p.in === "header" ? "header" : undefined;
        const key = toolName(p.name);
        if (!where || key !== p.name) {
          review.push(`Parameter ${p.name} (${p.in}) is not imported.`);
          continue;
        }
        if (where === "header") review.push(`Header parameter ${p.name} is accepted but never sent.`);
        properties[key] = { ...parameterType(resolve(doc, p.schema)), description: (typeof p.description === "string" && p.description) || key };
        paramMapping[key] = where;
        if (p.required === true || where === "path") required.push(key);
      }
      const body = resolve(doc, operation.requestBody);
      const content = isObject(body) && isObject(body.content) ? body.content : {};
      const json = content["application/json"];
      const bodySchema = isObject(json) ? resolve(doc, json.schema) : undefined;
      if (isObject(bodySchema) && isObject(bodySchema.properties)) {
        if (is31 && schema31(bodySchema))
          throw new OpenApiImportError(
            "TOOL_IMPORT_INVALID",
            `${method.toUpperCase()} ${path}: the request body uses ${schema31(bodySchema)} (OpenAPI 3.1 only).`,
            "UNSUPPORTED_3_1",
          );
        const requiredFields = Array.isArray(bodySchema.required) ? bodySchema.required : [];
        for (const [field, raw] of Object.entries(bodySchema.properties)) {
          const key = toolName(field);
          if (key !== field || key in properties) {
            review.push(`Body field ${field} is not imported.`);
            continue;
          }
          const fieldSchema = resolve(doc, raw);
          const description =
            isObject(fieldSchema) && typeof fieldSchema.description === "string" && fieldSchema.description ? fieldSchema.description : key;
          properties[key] = { ...parameterType(fieldSchema), description };
          // The spec's mapping: request-body fields are put as query parameters.
          paramMapping[key] = "query";
          if (requiredFields.includes(field)) required.push(key);
        }
        review.push("Request-body fields are sent as query parameters.");
      }
      let auth: DraftTool["auth"];
      const security = Array.isArray(operation.security) ? operation.security : globalSecurity;
      for (const requirement of security) {
        if (!isObject(requirement) || auth) continue;
        for (const schemeName of Object.keys(requirement)) {
          const scheme = resolve(doc, schemes[schemeName]);
          if (!isObject(scheme)) continue;
          const secretRef = schemeName.replace(/[^A-Za-z0-9_.-]/g, "_").slice(0, 100);
          if (scheme.type === "http" && typeof scheme.scheme === "string" && scheme.scheme.toLowerCase() === "bearer")
            auth = { type: "bearer", keyName: "Authorization", secretRef };
          else if (scheme.type === "apiKey" && scheme.in === "header" && typeof scheme.name === "string")
            auth = { type: "header", keyName: scheme.name, secretRef };
          else review.push(`Security scheme ${schemeName} is not understood (API key in a header and HTTP bearer only).`);
          if (auth) {
            review.push(`Give the secret ${secretRef} in toolSecrets at deploy.`);
            break;
          }
        }
      }
      const summary =
        typeof operation.summary === "string" && operation.summary
          ? operation.summary
          : typeof operation.description === "string"
            ? operation.description
            : "";
      drafts.push({
        tool: {
          type: "http",
          name,
          description: (summary || `${method.toUpperCase()} ${path}`).slice(0, 2000),
          parameters: { type: "object", properties, ...(required.length > 0 ? { required } : {}) },
          method: method.toUpperCase() as DraftTool["method"],
          url: path,
          paramMapping,
          ...(auth ? { auth } : {}),
        },
        review,
      });
    }
  }
  if (drafts.length === 0) throw new OpenApiImportError("TOOL_IMPORT_INVALID", "The document has no operations to import.", "NO_OPERATIONS");
  return { drafts, servers, skipped };
}
