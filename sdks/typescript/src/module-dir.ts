/**
 * The directory this module was loaded from, so the SDK can resolve its own
 * dependencies (the platform package holding the binary) wherever it is installed.
 *
 * This is the CommonJS form. The ES module build has no `__dirname`, and TypeScript
 * refuses `import.meta` in a file that also builds to CommonJS, so scripts/build.mjs
 * writes dist/esm/module-dir.js with the ES module form.
 */
export function moduleDir(): string {
  return __dirname;
}
