/**
 * Every request and answer of the API as one TypeBox schema each: the server validates and serializes with them and
 * types its routes with `Static<>`, the OpenAPI document is generated from them, and the SDK imports their types
 * (type-only, so the SDK loads no TypeBox at run time). One file per area of the API.
 */
export * from "./common";
export * from "./tasks";
export * from "./marketplace";
export * from "./verification";
export * from "./auth";
export * from "./agents";
export * from "./storage";
export * from "./feedback";
export * from "./reputation";
export * from "./health";
export * from "./discovery";
export * from "./mcp";
export * from "./tools";
export * from "./hosted";
export * from "./skills";
export * from "./services";
export * from "./admin";
export * from "./events";
export * from "./webhooks";
