// parse-hcl.mjs -- print Terraform files as JSON, parsed by HashiCorp's HCL parser (its
// hcl2json, built to WebAssembly in @cdktf/hcl2json): blocks become objects of lists,
// literals JSON values, and expressions their "${...}" text.
//
// Usage: node parse-hcl.mjs FILE.tf...   prints {"FILE.tf": {...}, ...}
// Exit 1, naming the file, when one is not valid HCL; 2 on a usage error.
import { readFileSync } from "node:fs";
import { parse } from "@cdktf/hcl2json";

const files = process.argv.slice(2);
if (files.length === 0) {
  console.error("usage: node parse-hcl.mjs FILE.tf...");
  process.exit(2);
}
const out = {};
for (const file of files) {
  try {
    out[file] = await parse(file, readFileSync(file, "utf8"));
  } catch (err) {
    console.error(`${file}: ${err.message ?? err}`);
    process.exit(1);
  }
}
console.log(JSON.stringify(out));
