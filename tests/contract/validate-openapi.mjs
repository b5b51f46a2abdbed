// validate-openapi.mjs -- check an OpenAPI 3.1 document: against the official OpenAPI
// schema (which also resolves every internal $ref), then every example it gives
// against the schema it illustrates, so the reference never shows a wrong example.
//
// Usage: node validate-openapi.mjs PATH/TO/openapi.yaml
// Exit 0 when all is well, 1 with every error printed when not, 2 on a usage error.
import { existsSync } from "node:fs";
import { Validator } from "@seriousme/openapi-schema-validator";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const DOC_ID = "urn:cairn:openapi";

const file = process.argv[2];
if (!file) {
  console.error("usage: node validate-openapi.mjs PATH/TO/openapi.yaml");
  process.exit(2);
}
if (!existsSync(file)) {
  console.error(`validate-openapi: ${file}: no such file`);
  process.exit(2);
}

function formatAjvError(e) {
  const params = e.params && Object.keys(e.params).length ? ` ${JSON.stringify(e.params)}` : "";
  return `${e.instancePath || "/"}: ${e.message}${params}`;
}

// Structural validation of the whole document.
async function checkStructure() {
  const validator = new Validator();
  let result;
  try {
    result = await validator.validate(file);
  } catch (err) {
    return { errors: [err.message] };
  }
  if (result.valid) return { spec: validator.specification, version: validator.version, errors: [] };
  const errors = Array.isArray(result.errors) ? result.errors : [result.errors];
  return {
    errors: errors.map((e) =>
      e && typeof e === "object" && "instancePath" in e ? formatAjvError(e) : JSON.stringify(e)),
  };
}

// Follow a local "#/..." reference inside the document.
function resolve(spec, obj) {
  while (obj && typeof obj === "object" && typeof obj.$ref === "string") {
    let node = spec;
    for (const raw of obj.$ref.slice(2).split("/")) {
      node = node?.[raw.replaceAll("~1", "/").replaceAll("~0", "~")];
    }
    obj = node;
  }
  return obj;
}

// Yield [where, schema, example] for every example the document gives.
function* examples(spec) {
  for (const [name, schema] of Object.entries(spec.components?.schemas ?? {})) {
    if (schema.example !== undefined) {
      yield [`components.schemas.${name}`, { $ref: `#/components/schemas/${name}` }, schema.example];
    }
  }
  function* fromMedia(where, content) {
    for (const [type, media] of Object.entries(content ?? {})) {
      if (!media.schema) continue;
      if (media.example !== undefined) yield [`${where} ${type}`, media.schema, media.example];
      for (const [name, ex] of Object.entries(media.examples ?? {})) {
        const value = resolve(spec, ex)?.value;
        if (value !== undefined) yield [`${where} ${type} examples.${name}`, media.schema, value];
      }
    }
  }
  function* fromParams(where, params) {
    for (const p of (params ?? []).map((p) => resolve(spec, p))) {
      if (p?.schema && p.example !== undefined) {
        yield [`${where} parameter ${p.name}`, p.schema, p.example];
      }
    }
  }
  for (const [name, resp] of Object.entries(spec.components?.responses ?? {})) {
    yield* fromMedia(`components.responses.${name}`, resolve(spec, resp)?.content);
  }
  yield* fromParams("components.parameters", Object.values(spec.components?.parameters ?? {}));
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    yield* fromParams(path, item.parameters);
    for (const [method, op] of Object.entries(item)) {
      if (!op || typeof op !== "object" || !op.responses) continue;
      const where = `${method.toUpperCase()} ${path}`;
      yield* fromParams(where, op.parameters);
      yield* fromMedia(`${where} request`, resolve(spec, op.requestBody)?.content);
      for (const [status, resp] of Object.entries(op.responses)) {
        if (!resp.$ref) yield* fromMedia(`${where} ${status}`, resp.content);
      }
    }
  }
}

// Local references become references into the document registered under DOC_ID.
function anchorRefs(schema) {
  return JSON.parse(JSON.stringify(schema), (key, value) =>
    key === "$ref" && typeof value === "string" && value.startsWith("#") ? DOC_ID + value : value);
}

function checkExamples(spec) {
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema({ $id: DOC_ID, components: anchorRefs(spec.components ?? {}) });
  const errors = [];
  let count = 0;
  for (const [where, schema, value] of examples(spec)) {
    count++;
    let validate;
    try {
      validate = ajv.compile(anchorRefs(schema));
    } catch (err) {
      errors.push(`${where}: schema does not compile: ${err.message}`);
      continue;
    }
    if (!validate(value)) {
      for (const e of validate.errors) errors.push(`${where}: example ${formatAjvError(e)}`);
    }
  }
  return { count, errors };
}

const structure = await checkStructure();
if (structure.errors.length) {
  console.error(`validate-openapi: ${file} does not match the OpenAPI schema:`);
  for (const e of structure.errors) console.error(`  ${e}`);
  process.exit(1);
}
const ex = checkExamples(structure.spec);
if (ex.errors.length) {
  console.error(`validate-openapi: ${file}: examples that do not match their schema:`);
  for (const e of ex.errors) console.error(`  ${e}`);
  process.exit(1);
}
console.log(`validate-openapi: ${file} is a valid OpenAPI ${structure.version} document; ` +
  `${ex.count} examples match their schemas`);
