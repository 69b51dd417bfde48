// `@market/core/<path>` is core's TypeScript sources in this repository (core/<path>.ts) wherever ts-node runs: the
// tests, the server, the scripts and benchmarks, and the worker threads that register ts-node. tsconfig.json's
// "ts-node" section preloads this file, as its "paths" do the same for the type check, web/tsconfig.json and
// web/vite.config.ts for the web app. Plain Node (the built SDK and CLI, the packed packages) goes through core's
// package.json "exports" to its build, core/dist.
"use strict";
const Module = require("node:module");
const path = require("node:path");

const NAME = "@market/core";
const CORE = path.resolve(__dirname, "../../core");
const resolveFilename = Module._resolveFilename;

Module._resolveFilename = function (request, ...rest) {
  const inCore = typeof request === "string" && (request === NAME || request.startsWith(`${NAME}/`));
  return resolveFilename.call(this, inCore ? CORE + request.slice(NAME.length) : request, ...rest);
};
