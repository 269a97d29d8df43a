// ESLint for the TypeScript SDK (run by CTest as sdk.typescript.lint): the recommended
// JavaScript rules and typescript-eslint's type-aware recommended ones.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["dist/**", "node_modules/**", "scripts/**", "eslint.config.mjs"] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { project: ["./tsconfig.esm.json", "./tsconfig.test.json"], tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    // node:test's test() returns a promise the runner itself awaits.
    files: ["test/**/*.ts"],
    rules: { "@typescript-eslint/no-floating-promises": "off" },
  },
);
