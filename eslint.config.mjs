// ESLint (flat config) over all TypeScript of the repository; `npm run lint` runs it with Prettier's check.
// Type-aware rules are the few that catch real bugs the type check lets through (promises left floating or passed
// where a callback's result is ignored, awaits of non-promises, assertions that assert nothing); they read the one
// program of tsconfig.json.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  {
    ignores: ["node_modules/", "artifacts/", "cache/", "typechain-types/", "core/dist/", "sdk/dist/", "cli/dist/", "dist/", "web/dist/", "coverage/"],
  },
  {
    files: ["**/*.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: {
      parserOptions: { project: "./tsconfig.json", tsconfigRootDir: import.meta.dirname },
    },
    linterOptions: { reportUnusedDisableDirectives: "error" },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": "error",
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unnecessary-type-assertion": "error",
      // Prettier owns the layout and ends every statement with a semicolon, so no newline can join two expressions;
      // this rule would refuse Prettier's own breaks (`contract\n  ["overloaded(uint256)"](...)`).
      "no-unexpected-multiline": "off",
      // `_name` marks a binding kept for its position or to leave a field out of a rest object.
      "@typescript-eslint/no-unused-vars": [
        "error",
        { argsIgnorePattern: "^_", varsIgnorePattern: "^_", destructuredArrayIgnorePattern: "^_", ignoreRestSiblings: true },
      ],
    },
  },
  {
    // The web app (issue 28) is its own program: the browser's types, JSX (web/tsconfig.json).
    files: ["web/src/**/*.ts", "web/src/**/*.tsx", "web/vite.config.ts"],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: {
      parserOptions: { project: ["./web/tsconfig.json", "./web/tsconfig.config.json"], tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      "@typescript-eslint/no-floating-promises": "error",
      "@typescript-eslint/no-misused-promises": ["error", { checksVoidReturn: { attributes: false } }],
      "@typescript-eslint/await-thenable": "error",
      "@typescript-eslint/no-unnecessary-type-assertion": "error",
      "no-unexpected-multiline": "off",
    },
  },
  {
    // Kysely's own convention: a migration takes Kysely<any>, never the app's table types, so it stays valid as the
    // schema moves on.
    files: ["server/db/migrations/*.ts"],
    rules: { "@typescript-eslint/no-explicit-any": "off" },
  },
  {
    files: ["**/*.mjs", "**/*.js", "**/*.cjs"],
    extends: [js.configs.recommended],
    languageOptions: { globals: { process: "readonly", require: "readonly", module: "writable", console: "readonly", __dirname: "readonly" } },
  },
);
