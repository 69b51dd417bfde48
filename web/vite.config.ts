// The web app's build (issue 28): `npm run build` runs `vite build --config web/vite.config.ts` and writes web/dist,
// which the API's server serves (server/web). Hashed file names under assets/ are cached for good.
import path from "node:path";
import { defineConfig } from "vite";
import react from "@vitejs/plugin-react";

export default defineConfig({
  root: __dirname,
  plugins: [react()],
  // The SDK's posting engine runs in the page (bulk posting): core/crypto's node:crypto calls on @noble (web/src/node).
  // (the `buffer` package it brings reads Node's `global`). @market/core is bundled from its TypeScript sources (core/),
  // as web/tsconfig.json's "paths" type it, not from its CommonJS build.
  resolve: {
    alias: [
      { find: "node:crypto", replacement: path.join(__dirname, "src/node/crypto.ts") },
      { find: /^@market\/core\//, replacement: `${path.join(__dirname, "..", "core")}/` },
    ],
  },
  define: { global: "globalThis" },
  build: {
    outDir: path.join(__dirname, "dist"),
    emptyOutDir: true,
    assetsDir: "assets",
    // No inline module-preload polyfill or data: scripts: the page's Content-Security-Policy allows 'self' only.
    modulePreload: { polyfill: false },
    assetsInlineLimit: 0,
    target: "es2022",
    sourcemap: false,
    // The modules of the first load that the lazily loaded pages' SDK also imports (the API client, the error table,
    // amounts, the event stream, the wallet and session) in one chunk: left to itself, rolldown splits them into
    // several small shared chunks (a shared chunk never imports from the entry), a few KB more on the first load
    // (bench:web's firstLoadJsGzipKb).
    rolldownOptions: {
      output: {
        codeSplitting: {
          groups: [
            {
              name: "first-load",
              test: /web\/src\/(session|wallet|events|api|ui|router|constants)\.tsx?$|core\/(errors|money|capabilities|chains)\.ts$|sdk\/src\/(http|events|errors)\.ts$/,
            },
          ],
        },
      },
    },
  },
  // The app reaches the API on the same origin; `vite dev` forwards it to a running `npm start`.
  server: { proxy: { "/api": "http://127.0.0.1:3000" } },
});
