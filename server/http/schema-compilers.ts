/**
 * Fastify's own schema compilers (Ajv for requests, fast-json-stringify for answers) behind one memo for the process:
 * an app built again in the same process (every route test builds one; compiling every route's schemas takes about
 * 300 ms) reuses what was compiled for the same route, schema, shared schemas and options. A compiled validator or
 * serializer is a pure function of those, so sharing one shares no state between apps.
 */
import { AjvCompiler } from "@fastify/ajv-compiler";
import { SerializerSelector } from "@fastify/fast-json-stringify-compiler";

/** A cache key: the JSON of the value, with functions (Ajv formats) by their source. */
function keyOf(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (typeof v === "function" ? `function:${String(v)}` : v));
}

/** The compiler factory `build`, answering each route definition it has compiled before from the memo. */
function memoized<External, Options, Route, Compiled>(
  build: (externalSchemas: External, options?: Options) => (route: Route) => Compiled,
): (externalSchemas: External, options?: Options) => (route: Route) => Compiled {
  const compiled = new Map<string, Compiled>();
  return (externalSchemas, options) => {
    const compile = build(externalSchemas, options);
    const prefix = keyOf([externalSchemas, options]);
    return (route) => {
      const key = prefix + keyOf(route);
      let found = compiled.get(key);
      if (found === undefined) compiled.set(key, (found = compile(route)));
      return found;
    };
  };
}

/** Fastify's `schemaController.compilersFactory`. */
export const memoizedSchemaCompilers = {
  buildValidator: memoized(AjvCompiler()),
  buildSerializer: memoized(SerializerSelector()),
};
